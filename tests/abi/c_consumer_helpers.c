/* The ABI consumer's shared builders and comparisons (declared in c_consumer.h). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */

#include "c_consumer.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "abi_check.h"

void sleep_millis(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

hvd_tensor_t make_tensor(void* data, int32_t dtype, int32_t ndim, const int64_t* shape) {
  hvd_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.device.type = HVD_DEVICE_CPU;
  t.device.id = 0;
  return t;
}

hvd_op_args_t default_args(void) {
  hvd_op_args_t a;
  memset(&a, 0x5a, sizeof(a));
  hvd_op_args_init(&a, sizeof(a));
  return a;
}

/* Submits one allreduce, waits for it and frees its handle. */
op_result_t run_allreduce(const hvd_tensor_t* input, void* output, int32_t reduce_op,
                          const char* name, const hvd_op_args_t* args) {
  op_result_t r;
  hvd_handle_t h = 0;
  r.message[0] = '\0';
  r.submit = hvd_allreduce_async(input, output, reduce_op, name, args, &h);
  r.result = r.submit;
  if (r.submit != HVD_SUCCESS) {
    snprintf(r.message, sizeof(r.message), "%s", hvd_last_error_message());
    return r;
  }
  CHECK(h != 0);
  r.result = hvd_wait(h);
  if (r.result != HVD_SUCCESS)
    snprintf(r.message, sizeof(r.message), "%s", hvd_last_error_message());
  EXPECT_OK(hvd_handle_free(h));
  return r;
}

int floats_equal(const float* a, const float* b, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (a[i] != b[i]) return 0;
  }
  return 1;
}

int floats_scaled(const float* out, const float* in, size_t n, float factor) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (out[i] != in[i] * factor) return 0;
  }
  return 1;
}

hvd_dl_tensor_t make_dl(void* data, uint8_t code, uint8_t bits, int32_t ndim, int64_t* shape) {
  hvd_dl_tensor_t dl;
  memset(&dl, 0, sizeof(dl));
  dl.data = data;
  dl.device.type = HVD_DEVICE_CPU;
  dl.device.id = 0;
  dl.ndim = ndim;
  dl.dtype.code = code;
  dl.dtype.bits = bits;
  dl.dtype.lanes = 1;
  dl.shape = shape;
  dl.strides = NULL;
  dl.byte_offset = 0;
  return dl;
}
