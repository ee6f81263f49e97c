#include "ops/nccl/device_run.h"

#include <cstring>

#include "ops/nccl/comm_cache.h"

namespace hvdc::ops::nccl {

Status DeviceRun::comm_usable() const {
  return entry != nullptr ? entry->failure() : Status::ok();
}

Status DeviceRun::lease(BufferPool& pool, size_t bytes, void** out) {
  *out = nullptr;
  if (bytes == 0) return Status::ok();
  HVDC_RETURN_IF_ERROR(pool.acquire(bytes, out));
  leases.push_back(Lease{&pool, *out});
  return Status::ok();
}

Status DeviceRun::zeros(void* dst, size_t bytes) {
  if (bytes == 0) return Status::ok();
  void* host = nullptr;
  HVDC_RETURN_IF_ERROR(host_buffer(bytes, &host));
  std::memset(host, 0, bytes);
  return rt().copy_async(dst, host, bytes, stream());
}

}  // namespace hvdc::ops::nccl
