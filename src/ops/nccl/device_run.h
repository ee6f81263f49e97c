// One collective on the device while the backend queues it: the stream it runs on, the NCCL
// communicator, and the buffers it holds until its stream work finished.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "device/runtime.h"
#include "ops/nccl/device_context.h"

namespace hvdc::ops::nccl {

class CommEntry;

struct DeviceRun {
  DeviceContext* dev = nullptr;
  device::Communicator comm;   // null on the host path
  CommEntry* entry = nullptr;  // comm's (null on the host path)
  std::vector<Lease> leases;

  device::Runtime& rt() const { return *dev->runtime(); }
  device::Stream stream() const { return dev->stream(); }
  // Scratch that stays the op's until it finished (bytes may be 0: nullptr).
  Status device_buffer(size_t bytes, void** out) {
    return lease(dev->device_buffers(), bytes, out);
  }
  Status host_buffer(size_t bytes, void** out) { return lease(dev->host_buffers(), bytes, out); }
  // Zeros of `bytes` at dst, queued on the stream (a joined rank's contribution).
  Status zeros(void* dst, size_t bytes);
  // Ok while comm may be used: a wait on the host transport (its interrupt) may have aborted it.
  Status comm_usable() const;

 private:
  Status lease(BufferPool& pool, size_t bytes, void** out);
};

}  // namespace hvdc::ops::nccl
