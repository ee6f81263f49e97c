#include "host_runtime.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/dtype.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc_test {

using hvdc::common::make_error;

// An ordered queue of work with its own thread: what a CUDA stream is to the host.
class HostStream {
 public:
  HostStream() : thread_([this] { run(); }) {}
  ~HostStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void enqueue(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(fn));
      ++queued_;
    }
    cv_.notify_all();
  }
  // Blocks until everything queued so far ran (or the stream stops).
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t target = queued_;
    cv_.wait(lock, [&] { return done_ >= target || stop_; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      ++done_;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0;
  uint64_t done_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

namespace {

// Polls cond until it holds or the runtime stops (a stream waiting on something).
template <class Cond>
void wait_until(const HostRuntime& rt, Cond cond) {
  while (!cond() && !rt.stopping()) std::this_thread::sleep_for(std::chrono::microseconds(20));
}

}  // namespace

thread_local int HostRuntime::group_depth_ = 0;
thread_local std::vector<HostRuntime::GroupCall> HostRuntime::group_calls_;
thread_local std::string HostRuntime::last_error_;

void HostWorld::inject(int rank, const std::string& call, FaultMode mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.push_back({rank, call, mode});
}

bool HostWorld::take_fault(int rank, const std::string& call, FaultMode* mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->rank == rank && it->call == call) {
      *mode = it->mode;
      faults_.erase(it);
      return true;
    }
  }
  return false;
}

void HostWorld::set_gpu(int rank, int device, int gpu) {
  std::lock_guard<std::mutex> lock(mutex_);
  gpus_[{rank, device}] = gpu;
}

int HostWorld::gpu_of(int rank, int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = gpus_.find({rank, device});
  return it != gpus_.end() ? it->second : 1000 * (rank + 1) + device;
}

std::string HostWorld::next_unique_id() {
  std::lock_guard<std::mutex> lock(mutex_);
  return "host-nccl-id-" + std::to_string(++ids_);
}

void HostWorld::count(const std::string& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++calls_[call];
}

int HostWorld::calls(const std::string& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_[call];
}

HostRuntime::HostRuntime(std::shared_ptr<HostWorld> world, int rank, int devices)
    : world_(std::move(world)), rank_(rank), devices_(devices) {
  default_stream_ = std::make_unique<HostStream>();
}

HostRuntime::~HostRuntime() {
  stopping_.store(true);
  streams_.clear();  // joins their threads (waits give up on stopping_)
  default_stream_.reset();
  comms_.clear();
  for (auto& [ptr, bytes] : allocations_) std::free(ptr);
}

Status HostRuntime::fail(const std::string& text) {
  last_error_ = text;
  return Status(device::kErrDevice, text);
}

HostStream* HostRuntime::stream_of(device::Stream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream.handle == nullptr) return default_stream_.get();
  auto it = streams_.find(stream.handle);
  return it == streams_.end() ? nullptr : it->second.get();
}

void HostRuntime::enqueue(device::Stream stream, std::function<void()> fn) {
  stream_of(stream)->enqueue(std::move(fn));
}

void HostRuntime::drain(device::Stream stream) {
  stream_of(stream)->drain();
}

Status HostRuntime::device_count(int* count) {
  *count = devices_;
  return Status::ok();
}

Status HostRuntime::device_uuid(int device, device::DeviceUuid* out) {
  if (device < 0 || device >= devices_)
    return fail("cudaGetDeviceProperties: invalid device ordinal");
  const std::string id = "gpu-" + std::to_string(world_->gpu_of(rank_, device));
  std::memset(out->bytes, 0, sizeof(out->bytes));
  std::memcpy(out->bytes, id.data(), std::min(id.size(), sizeof(out->bytes)));
  return Status::ok();
}

Status HostRuntime::set_device(int device) {
  if (device < 0 || device >= devices_) return fail("cudaSetDevice: invalid device ordinal");
  return Status::ok();
}

Status HostRuntime::device_alloc(int device, size_t bytes, void** out) {
  HVDC_RETURN_IF_ERROR(set_device(device));
  return host_alloc(bytes, out);
}

Status HostRuntime::device_free(int device, void* ptr) {
  HVDC_RETURN_IF_ERROR(set_device(device));
  return host_free(ptr);
}

Status HostRuntime::host_alloc(size_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return Status::ok();
  *out = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (*out == nullptr) return fail("cudaMalloc: out of memory");
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_[*out] = bytes;
  return Status::ok();
}

Status HostRuntime::host_free(void* ptr) {
  if (ptr == nullptr) return Status::ok();
  std::lock_guard<std::mutex> lock(mutex_);
  if (allocations_.erase(ptr) == 0) return fail("cudaFree: invalid device pointer");
  std::free(ptr);
  return Status::ok();
}

Status HostRuntime::host_alloc_mapped(size_t bytes, void** host, void** device_ptr) {
  HVDC_RETURN_IF_ERROR(host_alloc(bytes, host));
  *device_ptr = *host;
  return Status::ok();
}

size_t HostRuntime::live_allocations() {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocations_.size();
}

Status HostRuntime::stream_create(int device, device::Stream* out) {
  HVDC_RETURN_IF_ERROR(set_device(device));
  auto stream = std::make_unique<HostStream>();
  out->handle = stream.get();
  std::lock_guard<std::mutex> lock(mutex_);
  streams_[out->handle] = std::move(stream);
  return Status::ok();
}

Status HostRuntime::stream_destroy(device::Stream stream) {
  std::unique_ptr<HostStream> gone;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(stream.handle);
    if (it == streams_.end()) return fail("cudaStreamDestroy: invalid resource handle");
    gone = std::move(it->second);
    streams_.erase(it);
  }
  return Status::ok();  // gone's destructor finishes its work first
}

Status HostRuntime::stream_synchronize(device::Stream stream) {
  HostStream* s = stream_of(stream);
  if (s == nullptr) return fail("cudaStreamSynchronize: invalid resource handle");
  s->drain();
  return Status::ok();
}

Status HostRuntime::event_create(int device, device::Event* out) {
  HVDC_RETURN_IF_ERROR(set_device(device));
  auto event = std::make_unique<HostEvent>();
  out->handle = event.get();
  std::lock_guard<std::mutex> lock(mutex_);
  events_[out->handle] = std::move(event);
  return Status::ok();
}

Status HostRuntime::event_destroy(device::Event event) {
  // CUDA frees an event's resources once its recorded work ran; stream work here may still
  // touch it, so it is kept until the runtime goes.
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.count(event.handle) == 0) return fail("cudaEventDestroy: invalid resource handle");
  return Status::ok();
}

Status HostRuntime::event_record(device::Event event, device::Stream stream) {
  HostStream* s = stream_of(stream);
  if (s == nullptr || event.handle == nullptr) return fail("cudaEventRecord: invalid handle");
  auto* e = static_cast<HostEvent*>(event.handle);
  const uint64_t number = e->recorded.fetch_add(1) + 1;
  s->enqueue([e, number] {
    uint64_t seen = e->reached.load();
    while (seen < number && !e->reached.compare_exchange_weak(seen, number)) {
    }
  });
  return Status::ok();
}

Status HostRuntime::event_query(device::Event event, bool* done) {
  auto* e = static_cast<HostEvent*>(event.handle);
  *done = e->reached.load() >= e->recorded.load();
  return Status::ok();
}

Status HostRuntime::stream_wait_event(device::Stream stream, device::Event event) {
  HostStream* s = stream_of(stream);
  if (s == nullptr) return fail("cudaStreamWaitEvent: invalid resource handle");
  auto* e = static_cast<HostEvent*>(event.handle);
  const uint64_t number = e->recorded.load();  // what the event captures now
  s->enqueue([this, e, number] { wait_until(*this, [&] { return e->reached.load() >= number; }); });
  return Status::ok();
}

Status HostRuntime::copy_async(void* dst, const void* src, size_t bytes, device::Stream stream) {
  HostStream* s = stream_of(stream);
  if (s == nullptr) return fail("cudaMemcpyAsync: invalid resource handle");
  world_->count("copy_async");
  s->enqueue([dst, src, bytes] { std::memmove(dst, src, bytes); });
  return Status::ok();
}

Status HostRuntime::batched_copy(const device::CopyPiece* pieces, size_t n, int32_t dtype,
                                 double scale, device::Stream stream) {
  HostStream* s = stream_of(stream);
  if (s == nullptr) return fail("batched copy: invalid stream");
  if (!hvdc::common::dtype_valid(dtype)) return fail("batched copy: invalid dtype");
  world_->count("batched_copy");
  std::vector<device::CopyPiece> copy(pieces, pieces + n);  // read before returning
  const size_t esize = hvdc::common::dtype_size(dtype);
  s->enqueue([copy, dtype, scale, esize] {
    for (const device::CopyPiece& p : copy) {
      if (scale == 1.0) {
        std::memmove(p.dst, p.src, p.count * esize);
      } else {
        hvdc::ops::cpu::scale(p.dst, p.src, p.count, dtype, scale);
      }
    }
  });
  return Status::ok();
}

Status HostRuntime::scale_in_place(void* buf, size_t count, int32_t dtype, double factor,
                                   device::Stream stream) {
  const device::CopyPiece piece{buf, buf, count};
  world_->count("scale_in_place");
  return batched_copy(&piece, 1, dtype, factor, stream);
}

Status HostRuntime::stream_write_value(device::Stream stream, void* word, uint32_t value) {
  HostStream* s = stream_of(stream);
  if (s == nullptr) return fail("cuStreamWriteValue32: invalid stream");
  auto* w = static_cast<uint32_t*>(word);
  s->enqueue([w, value] { __atomic_store_n(w, value, __ATOMIC_RELEASE); });
  return Status::ok();
}

Status HostRuntime::stream_wait_value(device::Stream stream, const void* word, uint32_t value) {
  HostStream* s = stream_of(stream);
  if (s == nullptr) return fail("cuStreamWaitValue32: invalid stream");
  const auto* w = static_cast<const uint32_t*>(word);
  s->enqueue([this, w, value] {
    wait_until(*this, [&] {
      return static_cast<int32_t>(__atomic_load_n(w, __ATOMIC_ACQUIRE) - value) >= 0;
    });
  });
  return Status::ok();
}

const char* HostRuntime::last_error_text() const {
  return last_error_.c_str();
}

std::function<Status(device::Runtime**)> provide(HostRuntime* runtime) {
  return [runtime](device::Runtime** out) {
    *out = runtime;
    return Status::ok();
  };
}

}  // namespace hvdc_test
