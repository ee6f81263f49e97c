#include "device/cuda/cuda_runtime.h"

#include <cstring>

#include "common/dtype.h"
#include "device/cuda/copy_kernels.h"

namespace hvdc::device::cuda {

namespace {

thread_local std::string t_last_error;

cudaStream_t raw(Stream s) {
  return static_cast<cudaStream_t>(s.handle);
}
cudaEvent_t raw(Event e) {
  return static_cast<cudaEvent_t>(e.handle);
}

#define HVDC_CUDA_TRY(call)                                            \
  do {                                                                 \
    const cudaError_t hvdc_err_ = (call);                              \
    if (hvdc_err_ != cudaSuccess) return cuda_error(#call, hvdc_err_); \
  } while (0)

// Driver results have no text without the driver's own cuGetErrorString; the number is
// searchable (CUresult in cuda.h).
Status driver_error(const char* call, CUresult res) {
  Status st =
      common::make_error(kErrDevice, "%s failed with CUresult %d", call, static_cast<int>(res));
  remember_error(st.message());
  return st;
}

}  // namespace

void remember_error(const std::string& text) {
  t_last_error = text;
}

Status cuda_error(const char* call, cudaError_t err, hvd_status_t code) {
  const std::string text =
      std::string(call) + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
  remember_error(text);
  return Status(code, text);
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

Status DeviceScope::enter(int device) {
  int current = 0;
  HVDC_CUDA_TRY(cudaGetDevice(&current));
  if (current == device) return Status::ok();
  HVDC_CUDA_TRY(cudaSetDevice(device));
  previous_ = current;
  return Status::ok();
}

Status DeviceScope::enter_stream(cudaStream_t stream) {
  if (stream == nullptr) return Status::ok();  // the legacy default stream of the current device
  int device = 0;
  HVDC_CUDA_TRY(cudaStreamGetDevice(stream, &device));
  return enter(device);
}

const char* CudaRuntime::last_error_text() const {
  return t_last_error.c_str();
}

Status CudaRuntime::device_count(int* count) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  // No driver, no device, a driver older than the runtime: nothing usable, which is not a
  // device failure but an absence.
  if (err != cudaSuccess) return cuda_error("cudaGetDeviceCount", err, HVD_ERR_UNSUPPORTED);
  if (n <= 0) {
    remember_error("cudaGetDeviceCount: no CUDA device");
    return Status(HVD_ERR_UNSUPPORTED, "cudaGetDeviceCount: no CUDA device");
  }
  *count = n;
  return Status::ok();
}

Status CudaRuntime::device_uuid(int device, DeviceUuid* out) {
  cudaDeviceProp prop;
  HVDC_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  static_assert(sizeof(prop.uuid) == DeviceUuid::kBytes, "cudaUUID_t is not 16 bytes");
  std::memcpy(out->bytes, &prop.uuid, sizeof(prop.uuid));
  return Status::ok();
}

Status CudaRuntime::set_device(int device) {
  HVDC_CUDA_TRY(cudaSetDevice(device));
  return Status::ok();
}

Status CudaRuntime::device_alloc(int device, size_t bytes, void** out) {
  if (bytes == 0) {
    *out = nullptr;
    return Status::ok();
  }
  DeviceScope scope;
  HVDC_RETURN_IF_ERROR(scope.enter(device));
  HVDC_CUDA_TRY(cudaMalloc(out, bytes));
  return Status::ok();
}

Status CudaRuntime::device_free(int device, void* ptr) {
  if (ptr == nullptr) return Status::ok();
  DeviceScope scope;
  HVDC_RETURN_IF_ERROR(scope.enter(device));
  HVDC_CUDA_TRY(cudaFree(ptr));
  return Status::ok();
}

Status CudaRuntime::host_alloc(size_t bytes, void** out) {
  HVDC_CUDA_TRY(cudaHostAlloc(out, bytes, cudaHostAllocPortable));
  return Status::ok();
}

Status CudaRuntime::host_free(void* ptr) {
  HVDC_CUDA_TRY(cudaFreeHost(ptr));
  return Status::ok();
}

Status CudaRuntime::stream_create(int device, Stream* out) {
  DeviceScope scope;
  HVDC_RETURN_IF_ERROR(scope.enter(device));
  cudaStream_t s = nullptr;
  HVDC_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  out->handle = s;
  return Status::ok();
}

Status CudaRuntime::stream_destroy(Stream stream) {
  HVDC_CUDA_TRY(cudaStreamDestroy(raw(stream)));
  return Status::ok();
}

Status CudaRuntime::stream_synchronize(Stream stream) {
  HVDC_CUDA_TRY(cudaStreamSynchronize(raw(stream)));
  return Status::ok();
}

Status CudaRuntime::event_create(int device, Event* out) {
  DeviceScope scope;
  HVDC_RETURN_IF_ERROR(scope.enter(device));
  cudaEvent_t e = nullptr;
  HVDC_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  out->handle = e;
  return Status::ok();
}

Status CudaRuntime::event_destroy(Event event) {
  HVDC_CUDA_TRY(cudaEventDestroy(raw(event)));
  return Status::ok();
}

Status CudaRuntime::event_record(Event event, Stream stream) {
  HVDC_CUDA_TRY(cudaEventRecord(raw(event), raw(stream)));
  return Status::ok();
}

Status CudaRuntime::event_query(Event event, bool* done) {
  const cudaError_t err = cudaEventQuery(raw(event));
  if (err == cudaErrorNotReady) {
    *done = false;
    return Status::ok();
  }
  if (err != cudaSuccess) return cuda_error("cudaEventQuery", err);
  *done = true;
  return Status::ok();
}

Status CudaRuntime::stream_wait_event(Stream stream, Event event) {
  HVDC_CUDA_TRY(cudaStreamWaitEvent(raw(stream), raw(event), 0));
  return Status::ok();
}

Status CudaRuntime::copy_async(void* dst, const void* src, size_t bytes, Stream stream) {
  if (bytes == 0) return Status::ok();
  HVDC_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, raw(stream)));
  return Status::ok();
}

Status CudaRuntime::batched_copy(const CopyPiece* pieces, size_t n, int32_t dtype, double scale,
                                 Stream stream) {
  if (!common::dtype_valid(dtype)) {
    return common::make_error(HVD_ERR_INVALID_ARGUMENT, "batched_copy: dtype %d is not valid",
                              dtype);
  }
  DeviceScope scope;  // kernels launch on the stream's device
  HVDC_RETURN_IF_ERROR(scope.enter_stream(raw(stream)));
  HVDC_CUDA_TRY(
      launch_batched_copy(pieces, n, dtype, common::dtype_size(dtype), scale, raw(stream)));
  return Status::ok();
}

Status CudaRuntime::scale_in_place(void* buf, size_t count, int32_t dtype, double factor,
                                   Stream stream) {
  const CopyPiece piece{buf, buf, count};
  return batched_copy(&piece, 1, dtype, factor, stream);
}

Status CudaRuntime::host_alloc_mapped(size_t bytes, void** host, void** device_ptr) {
  void* h = nullptr;
  HVDC_CUDA_TRY(cudaHostAlloc(&h, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  void* d = nullptr;
  const cudaError_t err = cudaHostGetDevicePointer(&d, h, 0);
  if (err != cudaSuccess) {
    cudaFreeHost(h);
    return cuda_error("cudaHostGetDevicePointer", err);
  }
  *host = h;
  *device_ptr = d;
  return Status::ok();
}

Status CudaRuntime::stream_write_value(Stream stream, void* word, uint32_t value) {
  const CUresult res = driver_.write_value32(static_cast<CUstream>(stream.handle),
                                             reinterpret_cast<CUdeviceptr>(word), value,
                                             CU_STREAM_WRITE_VALUE_DEFAULT);
  if (res != CUDA_SUCCESS) return driver_error("cuStreamWriteValue32", res);
  return Status::ok();
}

Status CudaRuntime::stream_wait_value(Stream stream, const void* word, uint32_t value) {
  const CUresult res =
      driver_.wait_value32(static_cast<CUstream>(stream.handle),
                           reinterpret_cast<CUdeviceptr>(word), value, CU_STREAM_WAIT_VALUE_GEQ);
  if (res != CUDA_SUCCESS) return driver_error("cuStreamWaitValue32", res);
  return Status::ok();
}

}  // namespace hvdc::device::cuda
