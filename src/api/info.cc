// Versions, status text, last error, features, and the DLPack conversion.
#include "api/api_state.h"
#include "common/dtype.h"
#include "device/plugin_loader.h"
#include "device/runtime.h"
#include "hvdc_config.h"

using hvdc::api::guarded;
using hvdc::common::make_error;
using hvdc::common::Status;

namespace {

// DLPack's (code, bits) for each hvdc dtype; lanes must be 1.
int32_t dtype_from_dlpack(hvd_dl_dtype_t t) {
  struct Map {
    uint8_t code, bits;
    int32_t dtype;
  };
  static const Map kMap[] = {
      {0, 8, HVD_INT8},     {0, 16, HVD_INT16},    {0, 32, HVD_INT32},   {0, 64, HVD_INT64},
      {1, 8, HVD_UINT8},    {1, 16, HVD_UINT16},   {2, 16, HVD_FLOAT16}, {2, 32, HVD_FLOAT32},
      {2, 64, HVD_FLOAT64}, {4, 16, HVD_BFLOAT16}, {6, 8, HVD_BOOL},
  };
  for (const Map& m : kMap) {
    if (m.code == t.code && m.bits == t.bits) return m.dtype;
  }
  return -1;
}

Status check_compact(const hvd_dl_tensor_t* dl) {
  if (dl->strides == nullptr) return Status::ok();
  int64_t expected = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    // Strides of size-1 dims carry no information; producers set them freely.
    if (dl->shape[i] != 1 && dl->strides[i] != expected) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "dl->strides[%d] is %lld, not %lld: only compact row-major tensors are "
                        "supported (make the tensor contiguous first)",
                        i, static_cast<long long>(dl->strides[i]),
                        static_cast<long long>(expected));
    }
    expected *= dl->shape[i];
  }
  return Status::ok();
}

}  // namespace

extern "C" {

const char* hvd_version_string(void) {
  return HVDC_VERSION_STRING;
}

int32_t hvd_abi_version(void) {
  return HVDC_ABI_VERSION;
}

const char* hvd_status_string(hvd_status_t status) {
  return hvdc::common::status_name(status);
}

const char* hvd_last_error_message(void) {
  return hvdc::api::last_error();
}

int32_t hvd_has_feature(int32_t feature) {
  switch (feature) {
    case HVD_FEATURE_UCX:
      return HVDC_HAVE_UCX;
    case HVD_FEATURE_MPI:
      return HVDC_HAVE_MPI;
    case HVD_FEATURE_CUDA:
      return HVDC_HAVE_CUDA;
    case HVD_FEATURE_NCCL:
      return HVDC_HAVE_NCCL;
    default:
      return 0;
  }
}

hvd_status_t hvd_device_count(int32_t* count) {
  return guarded([&] {
    if (count == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "count is NULL");
    // Set before anything can fail: a caller that ignores the status still reads no garbage.
    *count = 0;
    hvdc::device::Runtime* runtime = nullptr;
    HVDC_RETURN_IF_ERROR(hvdc::device::cuda_runtime(&runtime));
    int devices = 0;
    HVDC_RETURN_IF_ERROR(runtime->device_count(&devices));
    *count = devices;
    return Status::ok();
  });
}

hvd_status_t hvd_tensor_from_dlpack(const hvd_dl_tensor_t* dl, hvd_tensor_t* out) {
  return guarded([&] {
    if (dl == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "dl is NULL");
    if (out == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "out is NULL");
    if (dl->ndim < 0 || dl->ndim > HVD_MAX_NDIM || (dl->ndim > 0 && dl->shape == nullptr)) {
      return make_error(HVD_ERR_INVALID_ARGUMENT, "dl->ndim %d or dl->shape is invalid", dl->ndim);
    }
    const int32_t dtype = dtype_from_dlpack(dl->dtype);
    if (dtype < 0 || dl->dtype.lanes != 1) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "dl->dtype (code %u, bits %u, lanes %u) has no hvdc equivalent",
                        dl->dtype.code, dl->dtype.bits, dl->dtype.lanes);
    }
    HVDC_RETURN_IF_ERROR(check_compact(dl));
    hvd_tensor_t t;
    t.data = dl->data ? static_cast<char*>(dl->data) + dl->byte_offset : nullptr;
    t.dtype = dtype;
    t.ndim = dl->ndim;
    t.shape = dl->shape;
    t.device = dl->device;
    *out = t;
    return Status::ok();
  });
}

}  // extern "C"
