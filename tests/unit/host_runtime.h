// A host-memory implementation of device::Runtime for the tests, so the device backend's own
// logic runs on every machine: device memory is host memory, a stream is an ordered queue of
// work run by its own thread (ordering and asynchrony are real), events and stream words are
// real, and "NCCL" communicators run hvdc's host algorithms over a loopback fabric of their own,
// so thread-ranks really exchange data. A HostWorld joins the ranks' runtimes (one per rank, as
// one per process in production): it hands out unique ids, says which GPU each rank uses, and
// injects faults (a call that fails, or a communicator that fails later).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/runtime.h"

namespace hvdc_test {

using hvdc::common::Status;
namespace device = hvdc::device;

class HostStream;
struct HostComm;
struct HostCommFabric;

// What the ranks share.
class HostWorld {
 public:
  enum class FaultMode {
    kReturn,  // the call itself fails with HVD_ERR_DEVICE
    kAsync,   // the call succeeds; its work fails on the stream (an asynchronous NCCL error)
  };
  // The next call named `call` ("allreduce", "comm_init_rank", "group_end", ...) by `rank` fails.
  void inject(int rank, const std::string& call, FaultMode mode);
  // True (and the fault is used up) if such a fault is set; *mode says which.
  bool take_fault(int rank, const std::string& call, FaultMode* mode);
  // Rank `rank`'s device `device` is GPU `gpu` (default: a GPU of its own per rank and device).
  void set_gpu(int rank, int device, int gpu);
  int gpu_of(int rank, int device);
  // The communicator fabric named by `id`, made by its first member.
  std::shared_ptr<HostCommFabric> fabric(const std::string& id, int nranks);
  std::string next_unique_id();
  // Calls made so far by name (any rank): how the tests see what the backend did.
  void count(const std::string& call);
  int calls(const std::string& call);

 private:
  std::mutex mutex_;
  struct Fault {
    int rank;
    std::string call;
    FaultMode mode;
  };
  std::vector<Fault> faults_;
  std::map<std::pair<int, int>, int> gpus_;
  std::map<std::string, std::weak_ptr<HostCommFabric>> fabrics_;
  std::map<std::string, int> calls_;
  uint64_t ids_ = 0;
};

class HostRuntime : public device::Runtime {
 public:
  HostRuntime(std::shared_ptr<HostWorld> world, int rank, int devices = 2);
  ~HostRuntime() override;

  // Test hooks. Queues fn on a stream (the caller's "kernel"); a null handle is the default one.
  void enqueue(device::Stream stream, std::function<void()> fn);
  // Blocks until the stream ran everything queued so far.
  void drain(device::Stream stream);
  HostWorld& world() { return *world_; }
  int rank() const { return rank_; }

  Status device_count(int* count) override;
  Status device_uuid(int device, device::DeviceUuid* out) override;
  Status set_device(int device) override;
  Status device_alloc(int device, size_t bytes, void** out) override;
  Status device_free(int device, void* ptr) override;
  Status host_alloc(size_t bytes, void** out) override;
  Status host_free(void* ptr) override;
  Status stream_create(int device, device::Stream* out) override;
  Status stream_destroy(device::Stream stream) override;
  Status stream_synchronize(device::Stream stream) override;
  Status event_create(int device, device::Event* out) override;
  Status event_destroy(device::Event event) override;
  Status event_record(device::Event event, device::Stream stream) override;
  Status event_query(device::Event event, bool* done) override;
  Status stream_wait_event(device::Stream stream, device::Event event) override;
  Status copy_async(void* dst, const void* src, size_t bytes, device::Stream stream) override;
  Status batched_copy(const device::CopyPiece* pieces, size_t n, int32_t dtype, double scale,
                      device::Stream stream) override;
  Status scale_in_place(void* buf, size_t count, int32_t dtype, double factor,
                        device::Stream stream) override;
  Status host_alloc_mapped(size_t bytes, void** host, void** device_ptr) override;
  Status stream_write_value(device::Stream stream, void* word, uint32_t value) override;
  Status stream_wait_value(device::Stream stream, const void* word, uint32_t value) override;

  // host_nccl.cc
  Status unique_id(device::UniqueId* out) override;
  Status comm_init_rank(int device, int nranks, const device::UniqueId& id, int rank,
                        device::Communicator* out) override;
  Status comm_async_error(device::Communicator comm, bool* in_progress) override;
  Status comm_abort(device::Communicator comm) override;
  Status comm_destroy(device::Communicator comm) override;
  Status group_start() override;
  Status group_end() override;
  Status allreduce(const void* send, void* recv, size_t count, int32_t dtype, int32_t reduce_op,
                   device::Communicator comm, device::Stream stream) override;
  Status broadcast(const void* send, void* recv, size_t count, int32_t dtype, int root,
                   device::Communicator comm, device::Stream stream) override;
  Status reducescatter(const void* send, void* recv, size_t recv_count, int32_t dtype,
                       int32_t reduce_op, device::Communicator comm,
                       device::Stream stream) override;
  Status allgather(const void* send, void* recv, size_t send_count, int32_t dtype,
                   device::Communicator comm, device::Stream stream) override;
  Status send(const void* buf, size_t count, int32_t dtype, int peer, device::Communicator comm,
              device::Stream stream) override;
  Status recv(void* buf, size_t count, int32_t dtype, int peer, device::Communicator comm,
              device::Stream stream) override;
  const char* last_error_text() const override;

  // Live allocations (device + pinned), for leak checks.
  size_t live_allocations();
  // True once the runtime is being destroyed: waits on streams give up.
  bool stopping() const { return stopping_.load(); }

 private:
  struct HostEvent {
    std::atomic<uint64_t> recorded{0};  // the latest record's number
    std::atomic<uint64_t> reached{0};   // the latest record its stream passed
  };
  // One call inside group_start/group_end: run by group_end's single task, in order (p2p calls
  // posted together).
  struct GroupCall {
    std::shared_ptr<HostComm> comm;
    device::Stream stream;
    std::function<Status(HostComm&)> collective;  // empty for send/recv
    bool is_send = false;
    int peer = -1;
    void* buf = nullptr;
    size_t bytes = 0;
  };

  HostStream* stream_of(device::Stream stream);
  Status fail(const std::string& text);
  Status check_fault(const std::string& call, bool* async);
  std::shared_ptr<HostComm> comm_of(device::Communicator comm);
  Status launch(const std::string& call, device::Communicator comm, device::Stream stream,
                std::function<Status(HostComm&)> work);
  Status queue_call(GroupCall call);
  void run_group(std::vector<GroupCall> calls);

  std::shared_ptr<HostWorld> world_;
  int rank_;
  int devices_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<void*, std::unique_ptr<HostStream>> streams_;
  std::unique_ptr<HostStream> default_stream_;
  std::map<void*, std::unique_ptr<HostEvent>> events_;
  std::map<void*, size_t> allocations_;
  std::map<void*, std::shared_ptr<HostComm>> comms_;
  static thread_local int group_depth_;
  static thread_local std::vector<GroupCall> group_calls_;
  static thread_local std::string last_error_;
};

// The device::Runtime* provider for an engine or backend of `runtime` (not owned).
std::function<Status(device::Runtime**)> provide(HostRuntime* runtime);

}  // namespace hvdc_test
