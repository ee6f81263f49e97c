// libhvdc_cuda.so's one export: makes the CUDA runtime, or says why CUDA cannot be used here.
#include <cstdio>
#include <new>

#include "device/cuda/cuda_runtime.h"

namespace hvdc::device::cuda {
namespace {

// The CUDA version whose driver-function signatures DriverCalls declares.
constexpr unsigned kDriverApiVersion = 12000;

bool driver_function(const char* name, void** fn, char* err, size_t errlen) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, fn, kDriverApiVersion, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || *fn == nullptr) {
    std::snprintf(err, errlen, "the CUDA driver lacks %s: %s (%s)", name, cudaGetErrorString(e),
                  cudaGetErrorName(e));
    return false;
  }
  return true;
}

Runtime* create(char* err, size_t errlen) {
  // No driver, no device, a driver older than the runtime: CUDA's own words for it.
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) {
    std::snprintf(err, errlen, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e),
                  cudaGetErrorName(e));
    return nullptr;
  }
  DriverCalls calls;
  if (!driver_function("cuStreamWriteValue32", reinterpret_cast<void**>(&calls.write_value32), err,
                       errlen) ||
      !driver_function("cuStreamWaitValue32", reinterpret_cast<void**>(&calls.wait_value32), err,
                       errlen)) {
    return nullptr;
  }
  return new (std::nothrow) CudaRuntime(calls);
}

}  // namespace
}  // namespace hvdc::device::cuda

extern "C" __attribute__((visibility("default"))) hvdc::device::Runtime*
hvdc_cuda_runtime_create_v1(char* err, size_t errlen) {
  if (err != nullptr && errlen > 0) err[0] = '\0';
  char scratch[8];
  if (err == nullptr || errlen == 0) {
    err = scratch;
    errlen = sizeof(scratch);
  }
  hvdc::device::Runtime* runtime = hvdc::device::cuda::create(err, errlen);
  if (runtime == nullptr && err[0] == '\0') std::snprintf(err, errlen, "out of memory");
  return runtime;
}
