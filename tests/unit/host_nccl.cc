// The "NCCL" half of HostRuntime: communicators whose collectives run hvdc's host algorithms
// over a loopback fabric of their own (one per unique id), on the stream's thread.
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "common/dtype.h"
#include "host_runtime.h"
#include "ops/cpu/allgather/allgather.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/broadcast/broadcast.h"
#include "ops/cpu/comm.h"
#include "ops/cpu/reducescatter/reducescatter.h"
#include "transport/loopback/fabric.h"
#include "transport/loopback/loopback_transport.h"

namespace hvdc_test {

using hvdc::common::make_error;
namespace cpu = hvdc::ops::cpu;
namespace transport = hvdc::transport;

struct HostCommFabric {
  std::shared_ptr<transport::loopback::LoopbackFabric> fabric;
  std::atomic<int> joined{0};
  int nranks = 0;
};

struct HostComm {
  std::shared_ptr<HostCommFabric> shared;
  std::unique_ptr<transport::Transport> transport;
  int rank = 0;
  int nranks = 0;
  const HostRuntime* runtime = nullptr;
  std::atomic<bool> aborted{false};
  std::mutex mutex;
  Status error;      // the asynchronous error
  uint64_t ops = 0;  // numbers the collectives (the same order on every rank)
  std::vector<char> scratch, staging, work;

  void set_error(const Status& st) {
    std::lock_guard<std::mutex> lock(mutex);
    if (error.is_ok()) error = st;
  }
  // A communicator over this rank's transport for the next collective.
  cpu::Comm comm() {
    cpu::Comm c;
    c.transport = transport.get();
    for (int r = 0; r < nranks; ++r) c.members.push_back(r);
    c.index = rank;
    c.seq = ++ops;
    c.scratch = &scratch;
    c.staging = &staging;
    c.interrupt = [this]() -> Status {
      if (aborted.load()) return Status(hvdc::device::kErrDevice, "communicator aborted");
      if (runtime->stopping()) return Status(hvdc::device::kErrDevice, "runtime stopped");
      return Status::ok();
    };
    return c;
  }
};

namespace {

// The element types NCCL has (ncclDataType_t), by hvdc dtype.
bool nccl_dtype(int32_t dtype) {
  static const std::set<int32_t> kTypes{HVD_INT8,    HVD_UINT8,    HVD_INT32,   HVD_INT64,
                                        HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64};
  return kTypes.count(dtype) > 0;
}

Status check_reduction(int32_t dtype, int32_t op) {
  if (!nccl_dtype(dtype)) {
    return make_error(HVD_ERR_UNSUPPORTED, "NCCL has no type for %s",
                      hvdc::common::dtype_name(dtype));
  }
  if (op == HVD_OP_AVERAGE && !hvdc::common::dtype_is_float(dtype)) {
    return make_error(HVD_ERR_UNSUPPORTED, "ncclAvg of %s", hvdc::common::dtype_name(dtype));
  }
  return Status::ok();
}

cpu::ReduceSpec spec_of(int32_t dtype, int32_t op, int nranks) {
  cpu::ReduceSpec spec;
  spec.dtype = dtype;
  spec.op = op;
  spec.divisor = op == HVD_OP_AVERAGE ? nranks : 1;
  return spec;
}

}  // namespace

Status HostRuntime::unique_id(device::UniqueId* out) {
  const std::string id = world_->next_unique_id();
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, id.data(), id.size());
  world_->count("unique_id");
  return Status::ok();
}

std::shared_ptr<HostCommFabric> HostWorld::fabric(const std::string& id, int nranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<HostCommFabric> f = fabrics_[id].lock();
  if (!f) {
    f = std::make_shared<HostCommFabric>();
    f->fabric = transport::loopback::LoopbackFabric::create(nranks);
    f->nranks = nranks;
    fabrics_[id] = f;
  }
  return f;
}

Status HostRuntime::check_fault(const std::string& call, bool* async) {
  world_->count(call);
  HostWorld::FaultMode mode;
  *async = false;
  if (!world_->take_fault(rank_, call, &mode)) return Status::ok();
  if (mode == HostWorld::FaultMode::kAsync) {
    *async = true;
    return Status::ok();
  }
  return fail("nccl" + call + ": unhandled system error (injected)");
}

Status HostRuntime::comm_init_rank(int device, int nranks, const device::UniqueId& id, int rank,
                                   device::Communicator* out) {
  HVDC_RETURN_IF_ERROR(set_device(device));
  bool async = false;
  HVDC_RETURN_IF_ERROR(check_fault("comm_init_rank", &async));
  auto comm = std::make_shared<HostComm>();
  comm->shared = world_->fabric(std::string(id.bytes, strnlen(id.bytes, sizeof(id.bytes))), nranks);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->runtime = this;
  transport::TransportOptions options;
  options.rank = rank;
  options.size = nranks;
  options.progress_timeout_seconds = 120;  // the backend's abort must end waits long before
  HVDC_RETURN_IF_ERROR(transport::loopback::create_loopback_transport(comm->shared->fabric, options,
                                                                      &comm->transport));
  if (async) comm->set_error(fail("ncclCommInitRank: remote process exited (injected)"));
  comm->shared->joined.fetch_add(1);
  out->handle = comm.get();
  std::lock_guard<std::mutex> lock(mutex_);
  comms_[out->handle] = std::move(comm);
  return Status::ok();
}

std::shared_ptr<HostComm> HostRuntime::comm_of(device::Communicator comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = comms_.find(comm.handle);
  return it == comms_.end() ? nullptr : it->second;
}

Status HostRuntime::comm_async_error(device::Communicator comm, bool* in_progress) {
  std::shared_ptr<HostComm> c = comm_of(comm);
  if (!c) return fail("ncclCommGetAsyncError: invalid communicator");
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    if (!c->error.is_ok()) return c->error;
  }
  *in_progress = c->shared->joined.load() < c->nranks;
  return Status::ok();
}

Status HostRuntime::comm_abort(device::Communicator comm) {
  std::shared_ptr<HostComm> c = comm_of(comm);
  if (!c) return fail("ncclCommAbort: invalid communicator");
  world_->count("comm_abort");
  c->aborted.store(true);  // its stream work ends (the interrupt), then it goes
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.erase(comm.handle);
  return Status::ok();
}

Status HostRuntime::comm_destroy(device::Communicator comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (comms_.erase(comm.handle) == 0) return fail("ncclCommDestroy: invalid communicator");
  world_->count("comm_destroy");
  return Status::ok();
}

// Queues `work` on the stream; a failure becomes the communicator's asynchronous error, and an
// injected asynchronous fault replaces the work with one.
Status HostRuntime::launch(const std::string& call, device::Communicator comm,
                           device::Stream stream, std::function<Status(HostComm&)> work) {
  bool async = false;
  HVDC_RETURN_IF_ERROR(check_fault(call, &async));
  std::shared_ptr<HostComm> c = comm_of(comm);
  if (!c) return fail("nccl" + call + ": invalid communicator");
  if (async) {
    work = [call](HostComm&) {
      return Status(hvdc::device::kErrDevice,
                    "nccl" + call + ": unhandled cuda error (injected, asynchronous)");
    };
  }
  if (group_depth_ > 0) return queue_call(GroupCall{c, stream, std::move(work)});
  if (stream_of(stream) == nullptr) return fail("nccl" + call + ": invalid stream");
  enqueue(stream, [c, work] {
    if (c->aborted.load()) return;
    Status st = work(*c);
    if (!st.is_ok()) c->set_error(Status(hvdc::device::kErrDevice, st.message()));
  });
  return Status::ok();
}

Status HostRuntime::allreduce(const void* send, void* recv, size_t count, int32_t dtype,
                              int32_t reduce_op, device::Communicator comm, device::Stream stream) {
  HVDC_RETURN_IF_ERROR(check_reduction(dtype, reduce_op));
  const size_t bytes = count * hvdc::common::dtype_size(dtype);
  return launch("allreduce", comm, stream, [=](HostComm& c) {
    if (send != recv) std::memmove(recv, send, bytes);
    cpu::Comm cc = c.comm();
    return cpu::allreduce(cc, cpu::Pieces(recv, bytes), spec_of(dtype, reduce_op, c.nranks));
  });
}

Status HostRuntime::broadcast(const void* send, void* recv, size_t count, int32_t dtype, int root,
                              device::Communicator comm, device::Stream stream) {
  const size_t bytes = count * hvdc::common::dtype_size(dtype);
  return launch("broadcast", comm, stream, [=](HostComm& c) {
    if (c.rank == root && send != recv) std::memmove(recv, send, bytes);
    cpu::Comm cc = c.comm();
    return c.nranks == 1 ? Status::ok() : cpu::broadcast_tree(cc, recv, bytes, root);
  });
}

Status HostRuntime::reducescatter(const void* send, void* recv, size_t recv_count, int32_t dtype,
                                  int32_t reduce_op, device::Communicator comm,
                                  device::Stream stream) {
  HVDC_RETURN_IF_ERROR(check_reduction(dtype, reduce_op));
  const size_t esize = hvdc::common::dtype_size(dtype);
  return launch("reducescatter", comm, stream, [=](HostComm& c) {
    c.work.assign(static_cast<const char*>(send),
                  static_cast<const char*>(send) + recv_count * esize * c.nranks);
    cpu::Comm cc = c.comm();
    const std::vector<size_t> counts(c.nranks, recv_count);
    return cpu::reducescatter_ring(cc, c.work.data(), counts, recv,
                                   spec_of(dtype, reduce_op, c.nranks));
  });
}

Status HostRuntime::allgather(const void* send, void* recv, size_t send_count, int32_t dtype,
                              device::Communicator comm, device::Stream stream) {
  const size_t bytes = send_count * hvdc::common::dtype_size(dtype);
  return launch("allgather", comm, stream, [=](HostComm& c) {
    std::memmove(static_cast<char*>(recv) + c.rank * bytes, send, bytes);
    cpu::Comm cc = c.comm();
    const std::vector<size_t> blocks(c.nranks, bytes);
    return c.nranks == 1 ? Status::ok() : cpu::allgather_ring(cc, static_cast<char*>(recv), blocks);
  });
}

Status HostRuntime::send(const void* buf, size_t count, int32_t dtype, int peer,
                         device::Communicator comm, device::Stream stream) {
  bool async = false;
  HVDC_RETURN_IF_ERROR(check_fault("send", &async));
  std::shared_ptr<HostComm> c = comm_of(comm);
  if (!c || group_depth_ == 0) return fail("ncclSend: only inside a group here");
  GroupCall call{c,
                 stream,
                 nullptr,
                 true,
                 peer,
                 const_cast<void*>(buf),
                 count * hvdc::common::dtype_size(dtype)};
  return queue_call(std::move(call));
}

Status HostRuntime::recv(void* buf, size_t count, int32_t dtype, int peer,
                         device::Communicator comm, device::Stream stream) {
  bool async = false;
  HVDC_RETURN_IF_ERROR(check_fault("recv", &async));
  std::shared_ptr<HostComm> c = comm_of(comm);
  if (!c || group_depth_ == 0) return fail("ncclRecv: only inside a group here");
  GroupCall call{c, stream, nullptr, false, peer, buf, count * hvdc::common::dtype_size(dtype)};
  return queue_call(std::move(call));
}

Status HostRuntime::group_start() {
  ++group_depth_;
  return Status::ok();
}

Status HostRuntime::queue_call(GroupCall call) {
  group_calls_.push_back(std::move(call));
  return Status::ok();
}

Status HostRuntime::group_end() {
  if (group_depth_ == 0) return fail("ncclGroupEnd: no group started");
  if (--group_depth_ > 0) return Status::ok();
  std::vector<GroupCall> calls = std::move(group_calls_);
  group_calls_.clear();
  bool async = false;
  HVDC_RETURN_IF_ERROR(check_fault("group_end", &async));
  if (calls.empty()) return Status::ok();
  if (stream_of(calls[0].stream) == nullptr) return fail("ncclGroupEnd: invalid stream");
  enqueue(calls[0].stream, [this, calls] { run_group(calls); });
  return Status::ok();
}

// The group's collectives in order, then its sends and receives posted together (a send to
// oneself meets the matching receive by copy).
void HostRuntime::run_group(std::vector<GroupCall> calls) {
  HostComm& c = *calls[0].comm;
  if (c.aborted.load()) return;
  for (GroupCall& call : calls) {
    if (!call.collective) continue;
    Status st = call.collective(*call.comm);
    if (!st.is_ok()) return call.comm->set_error(Status(hvdc::device::kErrDevice, st.message()));
  }
  cpu::Comm cc = c.comm();
  std::vector<int> sent(c.nranks, 0), received(c.nranks, 0);
  std::vector<transport::Request> reqs;
  std::vector<GroupCall*> to_self, from_self;
  reqs.reserve(calls.size());
  for (GroupCall& call : calls) {
    if (call.collective) continue;
    if (call.peer == c.rank) {
      (call.is_send ? to_self : from_self).push_back(&call);
      continue;
    }
    reqs.emplace_back();
    Status st = call.is_send
                    ? c.transport->isend(call.peer, cc.tag(c.rank, sent[call.peer]++), call.buf,
                                         call.bytes, &reqs.back())
                    : c.transport->irecv(call.peer, cc.tag(call.peer, received[call.peer]++),
                                         call.buf, call.bytes, &reqs.back());
    if (!st.is_ok()) return c.set_error(Status(hvdc::device::kErrDevice, st.message()));
  }
  for (size_t i = 0; i < to_self.size() && i < from_self.size(); ++i) {
    std::memmove(from_self[i]->buf, to_self[i]->buf, to_self[i]->bytes);
  }
  if (reqs.empty()) return;
  Status st = c.transport->wait(reqs.data(), reqs.size(), cc.interrupt);
  if (!st.is_ok()) c.set_error(Status(hvdc::device::kErrDevice, st.message()));
}

}  // namespace hvdc_test
