#include "ops/nccl/nccl_backend.h"

#include "common/log.h"
#include "ops/nccl/device_collectives.h"
#include "ops/nccl/submission.h"

namespace hvdc::ops::nccl {

using common::make_error;

namespace {

const char* collective_name(Collective type) {
  switch (type) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kBarrier:
      return "barrier";
    case Collective::kAlltoall:
      return "alltoall";
    case Collective::kReducescatter:
      return "reducescatter";
  }
  return "collective";
}

// A failure on the NCCL path (an output allocator that refused, say) leaves the peers waiting in
// NCCL, or in creating the communicator, for this rank, and nothing there ever times out. It
// becomes a device failure: the engine ends its work and tells the peers, whose communicators are
// then aborted too. Failures of the engine's own (peer failure, timeout, abort) already do that,
// and stay.
Status as_device_failure(const Status& st) {
  switch (st.code()) {
    case HVD_ERR_PEER_FAILURE:
    case HVD_ERR_TIMEOUT:
    case HVD_ERR_ABORTED:
    case HVD_ERR_SHUT_DOWN:
    case HVD_ERR_TRANSPORT:
    case device::kErrDevice:
      return st;
    default:
      return Status(device::kErrDevice,
                    common::strfmt("%s (%s; this rank's NCCL communicator was aborted so that no "
                                   "peer waits for it)",
                                   st.message().c_str(), common::status_name(st.code())));
  }
}

}  // namespace

NcclBackend::NcclBackend(const BackendOptions& options, RuntimeProvider provider,
                         DeviceTimeouts timeouts)
    : provider_(std::move(provider)), host_path_(options) {
  abort_ = std::make_shared<AbortState>(timeouts, [this](const Status& why) {
    if (comms_) comms_->abort_all(why);
  });
}

NcclBackend::~NcclBackend() = default;

Status NcclBackend::runtime() {
  if (!provided_) {
    provided_ = true;
    runtime_status_ =
        provider_ ? provider_(&rt_) : make_error(HVD_ERR_UNSUPPORTED, "no CUDA runtime provider");
    if (runtime_status_.is_ok()) comms_ = std::make_unique<CommCache>(rt_);
  }
  return runtime_status_;
}

Status NcclBackend::context(int device, DeviceContext** out) {
  std::unique_ptr<DeviceContext>& ctx = devices_[device];
  if (!ctx) {
    Status st = DeviceContext::create(rt_, device, &ctx);
    if (!st.is_ok()) {
      devices_.erase(device);
      return st;
    }
  }
  *out = ctx.get();
  return Status::ok();
}

// The stream reads the tensors only after what their callers queued before submitting. Without
// a record from submission time, the callers' streams are captured now (later, and no good for
// a stream-ordered op: its caller's stream already waits for this op, which would wait for it).
Status NcclBackend::order_after_callers(const CollectiveArgs& op, DeviceContext& dev) {
  for (const TensorArgs& t : op.tensors) {
    if (t.submission) {
      HVDC_RETURN_IF_ERROR(rt_->stream_wait_event(dev.stream(), t.submission->inputs_ready));
      continue;
    }
    if (t.input == nullptr && t.output == nullptr) continue;  // a joined rank's zeros
    if (t.stream_ordered) {
      return make_error(HVD_ERR_INTERNAL,
                        "stream-ordered tensor '%s' has no submission record "
                        "(ops::nccl::record_submission was not called when it was submitted)",
                        t.name.c_str());
    }
    device::Event now;
    HVDC_RETURN_IF_ERROR(dev.acquire_event(&now));
    Status st = rt_->event_record(now, device::Stream{t.stream});
    if (st.is_ok()) st = rt_->stream_wait_event(dev.stream(), now);
    dev.release_event(now);  // the wait captured it; re-recording later is harmless
    HVDC_RETURN_IF_ERROR(st);
  }
  return Status::ok();
}

bool NcclBackend::takes_host_path(const CollectiveArgs& op, CommEntry& entry) {
  if (op.flags & HVD_OP_HOST_PATH) return true;
  if (entry.shared_gpu()) {
    if (entry.note_host_path_logged()) {
      HVDC_LOG_INFO(
          "several ranks of a process set share GPU %d: NCCL refuses that, so its "
          "device collectives run on the host path (pinned host memory)",
          op.device_id);
    }
    return true;
  }
  const bool reduces = op.type == Collective::kAllreduce || op.type == Collective::kReducescatter;
  return reduces && !reduces_on_nccl(op.dtype, op.reduce_op);
}

Status NcclBackend::run_on_nccl(const CollectiveArgs& op, CommEntry& entry, DeviceRun& run) {
  HVDC_RETURN_IF_ERROR(comms_->communicator(op.group, entry, &run.comm));
  run.entry = &entry;
  switch (op.type) {
    case Collective::kAllreduce:
      return allreduce_on_device(op, run);
    case Collective::kAllgather:
      return allgather_on_device(op, run);
    case Collective::kBroadcast:
      return broadcast_on_device(op, run);
    case Collective::kAlltoall:
      return alltoall_on_device(op, run);
    case Collective::kReducescatter:
      return reducescatter_on_device(op, run);
    case Collective::kBarrier:
      break;
  }
  return make_error(HVD_ERR_INTERNAL, "collective %d has no device form",
                    static_cast<int>(op.type));
}

Status NcclBackend::run(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) {
  DeviceRun run;
  HVDC_RETURN_IF_ERROR(context(op.device_id, &run.dev));
  std::shared_ptr<CommEntry> entry;
  HVDC_RETURN_IF_ERROR(comms_->entry(op.group, op.device_id, &entry));
  HVDC_RETURN_IF_ERROR(entry->failure());
  const bool host = takes_host_path(op, *entry);
  Status st = order_after_callers(op, *run.dev);
  if (st.is_ok()) st = host ? host_path_.run(op, run) : run_on_nccl(op, *entry, run);
  if (st.is_ok()) {
    st = complete_on_stream(op, std::move(run), host ? nullptr : entry, abort_, pending);
    if (st.is_ok()) return st;
  }
  // Work may be queued on the stream already: its buffers are never reused.
  for (const Lease& lease : run.leases) lease.pool->abandon(lease.ptr);
  if (!host) st = as_device_failure(st);
  if (st.code() == device::kErrDevice) entry->abort(st);
  return st;
}

Status NcclBackend::start(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) {
  pending->reset();
  if (op.type == Collective::kBarrier) return Status::ok();  // ready once every rank submitted
  if (!abort_->why().is_ok()) return abort_->why();
  // Without a runtime (no GPU, no driver) the message names the tensor like any other failure.
  Status st = runtime();
  if (st.is_ok()) st = run(op, pending);
  if (st.is_ok()) return st;
  const std::string& name = op.tensors.empty() ? std::string() : op.tensors[0].name;
  return st.with_context(common::strfmt("device %s of '%s'%s", collective_name(op.type),
                                        name.c_str(), op.tensors.size() > 1 ? " (fused)" : ""));
}

void NcclBackend::abort(const Status& why) {
  abort_->abort(why);
}

}  // namespace hvdc::ops::nccl
