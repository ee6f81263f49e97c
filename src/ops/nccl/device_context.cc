#include "ops/nccl/device_context.h"

#include <sched.h>

#include <chrono>
#include <thread>

namespace hvdc::ops::nccl {

namespace {

// Buffers grow in steps, so a fused op of a slightly different size reuses the last one.
size_t rounded(size_t bytes) {
  constexpr size_t kStep = 1 << 20;
  return bytes <= 4096 ? 4096 : (bytes + kStep - 1) / kStep * kStep;
}

}  // namespace

BufferPool::~BufferPool() {
  for (auto& [size, ptr] : free_) free_buffer(ptr);
}

Status BufferPool::allocate(size_t bytes, void** out) {
  return kind_ == Kind::kDevice ? runtime_->device_alloc(device_, bytes, out)
                                : runtime_->host_alloc(bytes, out);
}

void BufferPool::free_buffer(void* ptr) {
  (void)(kind_ == Kind::kDevice ? runtime_->device_free(device_, ptr) : runtime_->host_free(ptr));
}

Status BufferPool::acquire(size_t bytes, void** out) {
  auto it = free_.lower_bound(bytes);
  if (it != free_.end()) {
    *out = it->second;
    in_use_[it->second] = it->first;
    free_.erase(it);
    return Status::ok();
  }
  const size_t size = rounded(bytes);
  HVDC_RETURN_IF_ERROR(allocate(size, out).with_context(
      common::strfmt("allocating a %s buffer of %zu bytes",
                     kind_ == Kind::kDevice ? "device" : "pinned host", size)));
  in_use_[*out] = size;
  return Status::ok();
}

void BufferPool::release(void* ptr) {
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return;
  free_.emplace(it->second, ptr);
  in_use_.erase(it);
}

void BufferPool::abandon(void* ptr) {
  in_use_.erase(ptr);
}

DeviceContext::DeviceContext(device::Runtime* runtime, int device)
    : runtime_(runtime),
      device_(device),
      device_buffers_(runtime, device, BufferPool::Kind::kDevice),
      host_buffers_(runtime, device, BufferPool::Kind::kPinnedHost) {}

Status DeviceContext::create(device::Runtime* runtime, int device,
                             std::unique_ptr<DeviceContext>* out) {
  std::unique_ptr<DeviceContext> ctx(new DeviceContext(runtime, device));
  HVDC_RETURN_IF_ERROR(
      runtime->stream_create(device, &ctx->stream_)
          .with_context(common::strfmt("creating hvdc's stream on device %d", device)));
  *out = std::move(ctx);
  return Status::ok();
}

DeviceContext::~DeviceContext() {
  if (abandoned_) return;  // its buffers and events may still be in use: leave them
  (void)runtime_->stream_synchronize(stream_);
  for (device::Event event : all_events_) (void)runtime_->event_destroy(event);
  (void)runtime_->stream_destroy(stream_);
}

Status DeviceContext::acquire_event(device::Event* out) {
  if (!free_events_.empty()) {
    *out = free_events_.back();
    free_events_.pop_back();
    return Status::ok();
  }
  HVDC_RETURN_IF_ERROR(runtime_->event_create(device_, out));
  all_events_.push_back(*out);
  return Status::ok();
}

void DeviceContext::release_event(device::Event event) {
  free_events_.push_back(event);
}

Status wait_event(device::Runtime* runtime, device::Event event,
                  const transport::Interrupt& interrupt) {
  auto idle_since = std::chrono::steady_clock::now();
  for (;;) {
    bool done = false;
    HVDC_RETURN_IF_ERROR(runtime->event_query(event, &done));
    if (done) return Status::ok();
    if (interrupt) HVDC_RETURN_IF_ERROR(interrupt());
    // Spin briefly (a copy takes microseconds), then leave the core to the others.
    if (std::chrono::steady_clock::now() - idle_since < std::chrono::microseconds(50)) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace hvdc::ops::nccl
