#include "gpu_support.h"

namespace gpu_test {

int g_failures = 0;

hvd_tensor_t device_tensor(void* data, int32_t dtype, const int64_t* shape, int32_t ndim,
                           int device) {
  hvd_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.device.type = HVD_DEVICE_CUDA;
  t.device.id = device;
  return t;
}

void upload_input(const hvdc_test::Case& c, int rank, size_t count, void* device_ptr) {
  std::vector<unsigned char> host(count * hvdc_test::dtype_bytes(c.dtype));
  hvdc_test::fill_input(host.data(), count, c, rank);
  if (count > 0) CUDA_CHECK(cudaMemcpy(device_ptr, host.data(), host.size(), cudaMemcpyDefault));
}

bool check_device_allreduce(const void* device_ptr, size_t count, const hvdc_test::Case& c,
                            int size, std::string* detail) {
  std::vector<unsigned char> host(count * hvdc_test::dtype_bytes(c.dtype));
  if (count > 0) CUDA_CHECK(cudaMemcpy(host.data(), device_ptr, host.size(), cudaMemcpyDefault));
  return hvdc_test::check_allreduce(host.data(), count, c, size, detail);
}

void upload_floats(int rank, size_t count, void* device_ptr) {
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = input_value(rank, i);
  if (count > 0) CUDA_CHECK(cudaMemcpy(device_ptr, host.data(), count * 4, cudaMemcpyDefault));
}

std::vector<float> download_floats(size_t count, const void* device_ptr) {
  std::vector<float> host(count);
  if (count > 0) CUDA_CHECK(cudaMemcpy(host.data(), device_ptr, count * 4, cudaMemcpyDefault));
  return host;
}

}  // namespace gpu_test
