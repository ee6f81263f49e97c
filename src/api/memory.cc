// hvd_mem_alloc and friends: shared host memory that needs no engine (memory/shared_regions.h).
#include "api/api_state.h"
#include "memory/shared_regions.h"

using hvdc::api::guarded;
using hvdc::common::Status;

extern "C" {

hvd_status_t hvd_mem_alloc(size_t bytes, void** out) {
  return guarded([&] {
    if (out == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "out is NULL");
    if (bytes == 0) return Status(HVD_ERR_INVALID_ARGUMENT, "bytes is 0: nothing to allocate");
    return hvdc::memory::allocate_region(bytes, out);
  });
}

hvd_status_t hvd_mem_free(void* ptr) {
  return guarded([&] {
    if (ptr == nullptr) return Status::ok();
    return hvdc::memory::free_region(ptr);
  });
}

hvd_status_t hvd_mem_size(const void* ptr, void** base, size_t* bytes) {
  return guarded([&] {
    if (bytes == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "bytes is NULL");
    void* start = nullptr;
    size_t size = 0;
    if (!hvdc::memory::region_of(ptr, &start, &size)) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                      "ptr is %p, which lies in no buffer of hvd_mem_alloc", ptr);
    }
    if (base != nullptr) *base = start;
    *bytes = size;
    return Status::ok();
  });
}

}  // extern "C"
