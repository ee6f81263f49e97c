/* The ABI consumer's checks of hvd_tensor_from_dlpack: every dtype mapping, strides, byte
 * offsets, devices, and the rejections that leave the output untouched. */
#include <stdio.h>
#include <string.h>

#include "abi_check.h"
#include "c_consumer.h"

void test_dlpack(void) {
  static const struct {
    uint8_t code, bits;
    int32_t dtype;
  } kMap[] = {{0, 8, HVD_INT8},      {0, 16, HVD_INT16},   {0, 32, HVD_INT32},
              {0, 64, HVD_INT64},    {1, 8, HVD_UINT8},    {1, 16, HVD_UINT16},
              {2, 16, HVD_FLOAT16},  {2, 32, HVD_FLOAT32}, {2, 64, HVD_FLOAT64},
              {4, 16, HVD_BFLOAT16}, {6, 8, HVD_BOOL}};
  float data[8] = {0};
  int64_t shape[2] = {2, 3};
  int64_t compact[2] = {3, 1};
  int64_t transposed[2] = {1, 2};
  int64_t gapped[2] = {6, 2};
  int64_t big_shape[HVD_MAX_NDIM + 1];
  hvd_dl_tensor_t dl = make_dl(data, 2, 32, 2, shape);
  hvd_tensor_t out, untouched;
  size_t i;

  /* float32, compact (strides NULL). */
  memset(&out, 0, sizeof(out));
  EXPECT_OK(hvd_tensor_from_dlpack(&dl, &out));
  CHECK(out.data == (void*)data);
  CHECK(out.dtype == HVD_FLOAT32);
  CHECK(out.ndim == 2);
  CHECK(out.shape == shape); /* borrowed, not copied */
  CHECK(out.device.type == HVD_DEVICE_CPU && out.device.id == 0);

  /* Explicit compact row-major strides are accepted. */
  dl.strides = compact;
  EXPECT_OK(hvd_tensor_from_dlpack(&dl, &out));
  CHECK(out.dtype == HVD_FLOAT32);

  /* byte_offset is applied to the data pointer. */
  dl.strides = NULL;
  dl.byte_offset = 8;
  EXPECT_OK(hvd_tensor_from_dlpack(&dl, &out));
  CHECK(out.data == (void*)((char*)data + 8));
  dl.byte_offset = 0;

  /* The device is passed through (conversion does not touch the data). */
  dl.device.type = HVD_DEVICE_CUDA;
  dl.device.id = 1;
  EXPECT_OK(hvd_tensor_from_dlpack(&dl, &out));
  CHECK(out.device.type == HVD_DEVICE_CUDA && out.device.id == 1);
  dl.device.type = HVD_DEVICE_CPU;
  dl.device.id = 0;

  /* Every supported (code, bits) pair, bfloat16 (code 4) included. */
  for (i = 0; i < sizeof(kMap) / sizeof(kMap[0]); ++i) {
    hvd_dl_tensor_t d = make_dl(data, kMap[i].code, kMap[i].bits, 2, shape);
    hvd_status_t st;
    out.dtype = -1;
    st = hvd_tensor_from_dlpack(&d, &out);
    check_at(st == HVD_SUCCESS && out.dtype == kMap[i].dtype, __LINE__,
             "hvd_tensor_from_dlpack maps each DLPack (code, bits) to its hvdc dtype");
    if (st != HVD_SUCCESS || out.dtype != kMap[i].dtype) {
      printf("  (code %u bits %u: status %d, dtype %d, expected %d)\n", kMap[i].code, kMap[i].bits,
             (int)st, (int)out.dtype, (int)kMap[i].dtype);
    }
  }

  /* A scalar (ndim 0) needs no shape. */
  {
    hvd_dl_tensor_t d = make_dl(data, 2, 64, 0, NULL);
    EXPECT_OK(hvd_tensor_from_dlpack(&d, &out));
    CHECK(out.ndim == 0 && out.dtype == HVD_FLOAT64);
  }

  /* Rejections; the output stays untouched. */
  memset(&out, 0x77, sizeof(out));
  memcpy(&untouched, &out, sizeof(out));
  dl.dtype.lanes = 4;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "lanes");
  dl.dtype.lanes = 0;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "lanes");
  dl.dtype.lanes = 1;
  dl.dtype.code = 5; /* complex64 */
  dl.dtype.bits = 64;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "dtype");
  dl.dtype.code = 1; /* uint32 has no hvdc equivalent */
  dl.dtype.bits = 32;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "dtype");
  dl.dtype.code = 2;
  dl.dtype.bits = 32;
  dl.strides = transposed;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "strides");
  dl.strides = gapped;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "strides");
  dl.strides = NULL;
  for (i = 0; i < HVD_MAX_NDIM + 1; ++i) big_shape[i] = 1;
  dl.shape = big_shape;
  dl.ndim = HVD_MAX_NDIM + 1;
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, &out), HVD_ERR_INVALID_ARGUMENT, "ndim");
  dl.ndim = 2;
  dl.shape = shape;
  CHECK(memcmp(&out, &untouched, sizeof(out)) == 0);
  EXPECT_ERR(hvd_tensor_from_dlpack(NULL, &out), HVD_ERR_INVALID_ARGUMENT, "dl");
  EXPECT_ERR(hvd_tensor_from_dlpack(&dl, NULL), HVD_ERR_INVALID_ARGUMENT, "out");
}
