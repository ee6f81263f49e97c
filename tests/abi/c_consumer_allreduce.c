/* The ABI consumer's allreduce checks on one rank: every reduction, in and out of place, scale
 * factors, integer and bool semantics, scalars, empty and DLPack tensors, automatic names, and
 * every rejected argument with the name the message gives it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "abi_check.h"
#include "c_consumer.h"

void test_allreduce(void) {
  const float in[6] = {1.0f, 2.0f, 3.0f, -4.0f, 5.5f, 6.25f};
  const int64_t shape[2] = {2, 3};
  float src[6], dst[6];
  hvd_tensor_t t = make_tensor(src, HVD_FLOAT32, 2, shape);
  hvd_op_args_t args;
  op_result_t r;
  static const int32_t kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX,
                                 HVD_OP_PRODUCT};
  size_t i;

  for (i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    /* Out of place: the output is the input, the input is left alone. */
    memcpy(src, in, sizeof(in));
    memset(dst, 0, sizeof(dst));
    r = run_allreduce(&t, dst, kOps[i], "abi.out_of_place", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "allreduce out of place");
    check_at(floats_equal(dst, in, 6), __LINE__, "1-rank allreduce output == input");
    check_at(floats_equal(src, in, 6), __LINE__, "out-of-place allreduce leaves input alone");
    /* In place. */
    r = run_allreduce(&t, src, kOps[i], "abi.in_place", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "allreduce in place");
    check_at(floats_equal(src, in, 6), __LINE__, "1-rank in-place allreduce keeps the data");
  }

  /* Scale factors: prescale alone, postscale alone, both. */
  memcpy(src, in, sizeof(in));
  args = default_args();
  args.prescale_factor = 2.0;
  r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.prescale", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "prescale 2");
  CHECK(floats_scaled(dst, in, 6, 2.0f));
  CHECK(floats_equal(src, in, 6));
  args = default_args();
  args.postscale_factor = 0.5;
  r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.postscale", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "postscale 0.5");
  CHECK(floats_scaled(dst, in, 6, 0.5f));
  args = default_args();
  args.prescale_factor = 2.0;
  args.postscale_factor = 0.5;
  r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.both_scales", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "prescale 2, postscale 0.5");
  CHECK(floats_equal(dst, in, 6));
  args.prescale_factor = 3.0;
  r = run_allreduce(&t, dst, HVD_OP_AVERAGE, "abi.average_scales", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "average, 3 and 0.5");
  CHECK(floats_scaled(dst, in, 6, 1.5f));
  /* In place with scale factors. */
  memcpy(src, in, sizeof(in));
  args.prescale_factor = 4.0;
  r = run_allreduce(&t, src, HVD_OP_SUM, "abi.in_place_scales", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "in place, 4 and 0.5");
  CHECK(floats_scaled(src, in, 6, 2.0f));

  /* Integers scale in double and round to nearest. */
  {
    int32_t ints[4] = {1, 3, -3, 10};
    int32_t out[4] = {0, 0, 0, 0};
    const int64_t n[1] = {4};
    hvd_tensor_t ti = make_tensor(ints, HVD_INT32, 1, n);
    args = default_args();
    args.prescale_factor = 1.6;
    r = run_allreduce(&ti, out, HVD_OP_SUM, "abi.int_scale", &args);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "int32 prescale 1.6");
    CHECK(out[0] == 2 && out[1] == 5 && out[2] == -5 && out[3] == 16);
    r = run_allreduce(&ti, out, HVD_OP_AVERAGE, "abi.int_average", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "int32 average");
    CHECK(out[0] == 1 && out[1] == 3 && out[2] == -3 && out[3] == 10);
  }
  /* Bool: SUM is OR, PRODUCT is AND; one rank keeps the values. */
  {
    uint8_t flags[3] = {0, 1, 1};
    uint8_t out[3] = {7, 7, 7};
    const int64_t n[1] = {3};
    hvd_tensor_t tb = make_tensor(flags, HVD_BOOL, 1, n);
    r = run_allreduce(&tb, out, HVD_OP_SUM, "abi.bool_sum", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "bool sum");
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == 1);
    r = run_allreduce(&tb, out, HVD_OP_PRODUCT, "abi.bool_product", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "bool product");
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == 1);
  }
  /* A scalar (ndim 0, shape NULL) and an empty tensor. */
  {
    double x = 2.5, y = 0.0;
    hvd_tensor_t ts = make_tensor(&x, HVD_FLOAT64, 0, NULL);
    const int64_t zero[2] = {0, 4};
    float empty_in[1] = {9.0f}, empty_out[1] = {8.0f};
    hvd_tensor_t te = make_tensor(empty_in, HVD_FLOAT32, 2, zero);
    r = run_allreduce(&ts, &y, HVD_OP_SUM, "abi.scalar", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "scalar allreduce");
    CHECK(y == 2.5);
    r = run_allreduce(&te, empty_out, HVD_OP_SUM, "abi.empty", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "empty allreduce");
    CHECK(empty_out[0] == 8.0f);
  }
  /* Automatic names (name == NULL), twice in a row. */
  memcpy(src, in, sizeof(in));
  r = run_allreduce(&t, dst, HVD_OP_SUM, NULL, NULL);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "automatic name #1");
  r = run_allreduce(&t, dst, HVD_OP_SUM, NULL, NULL);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "automatic name #2");
  CHECK(floats_equal(dst, in, 6));
  /* A DLPack tensor, with a byte offset, reduced in place. */
  {
    float buf[7] = {-1.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
    int64_t dshape[2] = {2, 3};
    hvd_dl_tensor_t dl = make_dl(buf, 2, 32, 2, dshape);
    hvd_tensor_t td;
    dl.byte_offset = sizeof(float);
    EXPECT_OK(hvd_tensor_from_dlpack(&dl, &td));
    args = default_args();
    args.prescale_factor = 2.0;
    r = run_allreduce(&td, td.data, HVD_OP_SUM, "abi.dlpack", &args);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "DLPack allreduce");
    CHECK(buf[0] == -1.0f && buf[1] == 2.0f && buf[6] == 12.0f);
  }
  /* A caller compiled before cuda_stream and flags existed: its struct ends before them, and
   * what lies beyond (0x5a bytes: unknown flags if read) is never read. */
  {
    const size_t old_size = offsetof(hvd_op_args_t, cuda_stream);
    memcpy(src, in, sizeof(in));
    EXPECT_OK(hvd_op_args_init(&args, old_size));
    memset((unsigned char*)&args + old_size, 0x5a, sizeof(args) - old_size);
    args.postscale_factor = 2.0;
    r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.old_args", &args);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "old-size op args");
    CHECK(dst[0] == 2.0f && dst[5] == 12.5f);
  }
  /* Device flags on a CPU tensor are accepted and change nothing. */
  args = default_args();
  args.flags = HVD_OP_STREAM_ORDERED | HVD_OP_HOST_PATH;
  r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.cpu_flags", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "device flags, CPU tensor");
  /* A CUDA tensor where CUDA is compiled out: unsupported, at submit or at wait, saying how to
   * build with it. */
  if (hvd_has_feature(HVD_FEATURE_CUDA) == 0) {
    memcpy(src, in, sizeof(in));
    t.device.type = HVD_DEVICE_CUDA;
    r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.cuda", NULL);
    expect_message_at(r.result, HVD_ERR_UNSUPPORTED, r.message, "-Dcuda=enabled", __LINE__,
                      "CUDA tensor without CUDA support");
    t.device.type = HVD_DEVICE_CPU;
    /* The engine is still usable afterwards. */
    r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.after_cuda", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "allreduce after CUDA");
  }
}

/* ---- Bad arguments ----------------------------------------------------------------------- */
void test_bad_arguments(void) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  float out[6];
  const int64_t shape[2] = {2, 3};
  const int64_t negative[2] = {2, -3};
  int64_t big_shape[HVD_MAX_NDIM + 1];
  uint8_t flags[6] = {0};
  hvd_tensor_t t = make_tensor(data, HVD_FLOAT32, 2, shape);
  hvd_tensor_t bad;
  hvd_op_args_t args;
  hvd_handle_t h = 1234;
  size_t i;

  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.bad", NULL, NULL),
             HVD_ERR_INVALID_ARGUMENT, "handle");
  EXPECT_ERR(hvd_allreduce_async(NULL, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "input");
  bad = t;
  bad.dtype = 99;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "dtype");
  bad.dtype = -1;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "dtype");
  EXPECT_ERR(hvd_allreduce_async(&t, out, 2, "abi.bad", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "reduce_op");
  EXPECT_ERR(hvd_allreduce_async(&t, out, 99, "abi.bad", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "reduce_op");
  for (i = 0; i < HVD_MAX_NDIM + 1; ++i) big_shape[i] = 1;
  bad = t;
  bad.ndim = HVD_MAX_NDIM + 1;
  bad.shape = big_shape;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "ndim");
  bad.ndim = -1;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "ndim");
  bad = t;
  bad.shape = negative;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "shape");
  bad.shape = NULL;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "shape");
  bad = t;
  bad.device.type = 7;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "device");
  bad = t;
  bad.data = NULL;
  EXPECT_ERR(hvd_allreduce_async(&bad, out, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "data");
  EXPECT_ERR(hvd_allreduce_async(&t, NULL, HVD_OP_SUM, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "output");
  bad = make_tensor(flags, HVD_BOOL, 2, shape);
  EXPECT_ERR(hvd_allreduce_async(&bad, flags, HVD_OP_AVERAGE, "abi.bad", NULL, &h),
             HVD_ERR_INVALID_ARGUMENT, "reduce_op");
  args = default_args();
  args.process_set = 5;
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.bad", &args, &h),
             HVD_ERR_INVALID_ARGUMENT, "process_set");
  args = default_args();
  args.prescale_factor = HUGE_VAL;
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.bad", &args, &h),
             HVD_ERR_INVALID_ARGUMENT, "scale");
  args = default_args();
  args.flags = 4;
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.bad", &args, &h),
             HVD_ERR_INVALID_ARGUMENT, "args->flags");
  args = default_args();
  args.struct_size = 0;
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.bad", &args, &h),
             HVD_ERR_INVALID_ARGUMENT, "struct_size");
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "", NULL, &h), HVD_ERR_INVALID_ARGUMENT,
             "name");
  CHECK(h == 1234); /* no failed submission wrote a handle */
  /* A rejected name is not left in flight: the same name works afterwards. */
  {
    op_result_t r = run_allreduce(&t, out, HVD_OP_SUM, "abi.bad", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__,
                      "a name whose submissions were rejected is free");
  }
}
