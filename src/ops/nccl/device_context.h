// What the device backend keeps per device: its own stream (every collective on the device runs
// there, in the engine's order), events for completion, and buffers reused from op to op (device
// memory for fusion and padding, pinned host memory for staging). Engine thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "device/runtime.h"
#include "transport/transport.h"

namespace hvdc::ops::nccl {

using common::Status;

// Buffers of one kind, kept by size and handed out again once an op released them.
class BufferPool {
 public:
  enum class Kind { kDevice, kPinnedHost };
  BufferPool(device::Runtime* runtime, int device, Kind kind)
      : runtime_(runtime), device_(device), kind_(kind) {}
  ~BufferPool();  // frees the free buffers (an abandoned one is never freed: see abandon())
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` (> 0): a free one, or a new one of bytes rounded up.
  Status acquire(size_t bytes, void** out);
  void release(void* ptr);
  // Device work may still use `ptr` after an abort: it is leaked rather than reused or freed.
  void abandon(void* ptr);

 private:
  Status allocate(size_t bytes, void** out);
  void free_buffer(void* ptr);

  device::Runtime* runtime_;
  int device_;
  Kind kind_;
  std::multimap<size_t, void*> free_;  // by size
  std::map<void*, size_t> in_use_;
};

// A buffer an op holds until it finished.
struct Lease {
  BufferPool* pool = nullptr;
  void* ptr = nullptr;
};

class DeviceContext {
 public:
  static Status create(device::Runtime* runtime, int device, std::unique_ptr<DeviceContext>* out);
  ~DeviceContext();  // waits for the stream unless work on it was abandoned
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  device::Runtime* runtime() const { return runtime_; }
  int device() const { return device_; }
  device::Stream stream() const { return stream_; }
  BufferPool& device_buffers() { return device_buffers_; }
  BufferPool& host_buffers() { return host_buffers_; }
  Status acquire_event(device::Event* out);
  void release_event(device::Event event);
  // Work on the stream was given up on (an abort whose device work never finished).
  void mark_abandoned() { abandoned_ = true; }

 private:
  DeviceContext(device::Runtime* runtime, int device);

  device::Runtime* runtime_;
  int device_;
  device::Stream stream_;
  BufferPool device_buffers_;
  BufferPool host_buffers_;
  std::vector<device::Event> free_events_;
  std::vector<device::Event> all_events_;
  bool abandoned_ = false;
};

// Polls `event` until its work ran, calling interrupt() in between (a failed interrupt ends the
// wait with its status). For the host path, which needs device data on the host before it runs.
Status wait_event(device::Runtime* runtime, device::Event event,
                  const transport::Interrupt& interrupt);

}  // namespace hvdc::ops::nccl
