#include "ops/backends.h"

#include "hvdc.h"
#include "ops/cpu/backend.h"
#include "ops/nccl/nccl_backend.h"

namespace hvdc::ops {

std::map<int32_t, std::unique_ptr<Backend>> make_backends(const BackendOptions& options,
                                                          DeviceRuntimeProvider device_runtime) {
  std::map<int32_t, std::unique_ptr<Backend>> backends;
  backends[HVD_DEVICE_CPU] = std::make_unique<cpu::CpuBackend>(options);
  if (device_runtime) {
    backends[HVD_DEVICE_CUDA] =
        std::make_unique<nccl::NcclBackend>(options, std::move(device_runtime));
  }
  return backends;
}

}  // namespace hvdc::ops
