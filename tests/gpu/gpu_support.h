// Helpers of the gpu suite: checks, device buffers, and inputs and expected values from the mpi
// suite's independent reference (tests/mpi/reference.h), moved to and from device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../mpi/reference.h"
#include "hvdc.h"

namespace gpu_test {

extern int g_failures;

#define GPU_CHECK(cond, ...)                                                \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::printf("rank %d: FAIL %s:%d: ", hvd_rank(), __FILE__, __LINE__); \
      std::printf(__VA_ARGS__);                                             \
      std::printf("\n");                                                    \
      ++gpu_test::g_failures;                                               \
    }                                                                       \
  } while (0)

#define CUDA_CHECK(call)                                                   \
  do {                                                                     \
    const cudaError_t e_ = (call);                                         \
    GPU_CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

#define HVD_CHECK(call)                                                      \
  do {                                                                       \
    const hvd_status_t s_ = (call);                                          \
    GPU_CHECK(s_ == HVD_SUCCESS, "%s: %s: %s", #call, hvd_status_string(s_), \
              hvd_last_error_message());                                     \
  } while (0)

// Device memory freed on scope exit.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (bytes > 0) CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

hvd_tensor_t device_tensor(void* data, int32_t dtype, const int64_t* shape, int32_t ndim,
                           int device);

// The reference's input of rank `rank` for case c, written to device memory.
void upload_input(const hvdc_test::Case& c, int rank, size_t count, void* device_ptr);
// An allreduce result in device memory against the reference; *detail explains a miss.
bool check_device_allreduce(const void* device_ptr, size_t count, const hvdc_test::Case& c,
                            int size, std::string* detail);

// For the other collectives: rank r's float32 element i is a small integer.
inline float input_value(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>((i % 5) + 1));
}
void upload_floats(int rank, size_t count, void* device_ptr);
std::vector<float> download_floats(size_t count, const void* device_ptr);

}  // namespace gpu_test
