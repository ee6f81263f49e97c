#include "ops/backends.h"

#include "hvdc.h"
#include "ops/cpu/backend.h"

namespace hvdc::ops {

std::map<int32_t, std::unique_ptr<Backend>> make_backends(const BackendOptions& options) {
  std::map<int32_t, std::unique_ptr<Backend>> backends;
  backends[HVD_DEVICE_CPU] = std::make_unique<cpu::CpuBackend>(options);
  return backends;
}

}  // namespace hvdc::ops
