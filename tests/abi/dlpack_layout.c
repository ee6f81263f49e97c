/* hvdc.h declares DLPack's tensor structs under its own names so that it needs no dlpack.h; a
 * DLTensor* must be usable as an hvd_dl_tensor_t* (zero copy). This file compares the layouts
 * with the installed dlpack/dlpack.h at compile time (C11 _Static_assert): if it compiles, the
 * layouts match. Running it only reports the result. */
#include <dlpack/dlpack.h>
#include <hvdc.h>

#include <stddef.h>
#include <stdio.h>

/* Same offset and same size for a member of our struct H and DLPack's struct D. */
#define SAME_MEMBER(H, hm, D, dm)                                                      \
  _Static_assert(offsetof(H, hm) == offsetof(D, dm), #H "." #hm " is at " #D "." #dm); \
  _Static_assert(sizeof(((H*)0)->hm) == sizeof(((D*)0)->dm),                           \
                 #H "." #hm " has the size of " #D "." #dm)

/* Same size and alignment for the whole struct. */
#define SAME_STRUCT(H, D)                                            \
  _Static_assert(sizeof(H) == sizeof(D), #H " has the size of " #D); \
  _Static_assert(_Alignof(H) == _Alignof(D), #H " has the alignment of " #D)

SAME_STRUCT(hvd_device_t, DLDevice);
SAME_MEMBER(hvd_device_t, type, DLDevice, device_type);
SAME_MEMBER(hvd_device_t, id, DLDevice, device_id);

SAME_STRUCT(hvd_dl_dtype_t, DLDataType);
SAME_MEMBER(hvd_dl_dtype_t, code, DLDataType, code);
SAME_MEMBER(hvd_dl_dtype_t, bits, DLDataType, bits);
SAME_MEMBER(hvd_dl_dtype_t, lanes, DLDataType, lanes);

SAME_STRUCT(hvd_dl_tensor_t, DLTensor);
SAME_MEMBER(hvd_dl_tensor_t, data, DLTensor, data);
SAME_MEMBER(hvd_dl_tensor_t, device, DLTensor, device);
SAME_MEMBER(hvd_dl_tensor_t, ndim, DLTensor, ndim);
SAME_MEMBER(hvd_dl_tensor_t, dtype, DLTensor, dtype);
SAME_MEMBER(hvd_dl_tensor_t, shape, DLTensor, shape);
SAME_MEMBER(hvd_dl_tensor_t, strides, DLTensor, strides);
SAME_MEMBER(hvd_dl_tensor_t, byte_offset, DLTensor, byte_offset);

/* Device codes are DLPack's (compared as ints: they are constants of different enums). */
_Static_assert((int)HVD_DEVICE_CPU == (int)kDLCPU, "HVD_DEVICE_CPU == kDLCPU");
_Static_assert((int)HVD_DEVICE_CUDA == (int)kDLCUDA, "HVD_DEVICE_CUDA == kDLCUDA");

/* The type codes hvd_tensor_from_dlpack reads (hvdc.h: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool).
 * kDLBool arrived in DLPack 0.8. */
_Static_assert(kDLInt == 0, "kDLInt == 0");
_Static_assert(kDLUInt == 1, "kDLUInt == 1");
_Static_assert(kDLFloat == 2, "kDLFloat == 2");
_Static_assert(kDLBfloat == 4, "kDLBfloat == 4");
#if defined(DLPACK_MAJOR_VERSION) || (defined(DLPACK_VERSION) && DLPACK_VERSION >= 80)
_Static_assert(kDLBool == 6, "kDLBool == 6");
#endif

int main(void) {
  printf("dlpack layout: 1 passed, 0 failed\n");
  return 0;
}
