/* For a build without CUDA (scripts/check_no_ucx.sh): hvd_device_count and a CUDA tensor both
 * fail with HVD_ERR_UNSUPPORTED and say how to build with CUDA; the engine goes on working.
 * Exits 0 when all of that holds, 1 otherwise, printing each failed check. */
#include <stdio.h>
#include <string.h>

#include "hvdc.h"

static int failures = 0;

static void check(int ok, const char* what) {
  if (!ok) {
    printf("no-cuda: failed: %s (last error: %s)\n", what, hvd_last_error_message());
    ++failures;
  }
}

int main(void) {
  const char* hint = "-Dcuda=enabled -Dnccl=enabled";
  float x[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  hvd_tensor_t t;
  hvd_handle_t h = 0;
  hvd_status_t st;
  int32_t count = -1;
  check(hvd_has_feature(HVD_FEATURE_CUDA) == 0 && hvd_has_feature(HVD_FEATURE_NCCL) == 0,
        "the CUDA and NCCL features are off");
  st = hvd_device_count(&count);
  check(st == HVD_ERR_UNSUPPORTED && count == 0, "hvd_device_count: unsupported, count 0");
  check(strstr(hvd_last_error_message(), hint) != NULL, "hvd_device_count says how to build");
  check(hvd_init() == HVD_SUCCESS, "hvd_init");
  t.data = x;
  t.dtype = HVD_FLOAT32;
  t.ndim = 1;
  t.shape = shape;
  t.device.type = HVD_DEVICE_CUDA;
  t.device.id = 0;
  st = hvd_allreduce_async(&t, x, HVD_OP_SUM, "no_cuda.tensor", NULL, &h);
  if (st == HVD_SUCCESS) {
    st = hvd_wait(h);
    hvd_handle_free(h);
  }
  check(st == HVD_ERR_UNSUPPORTED, "a CUDA tensor: HVD_ERR_UNSUPPORTED");
  check(strstr(hvd_last_error_message(), hint) != NULL, "the CUDA tensor's error says how");
  t.device.type = HVD_DEVICE_CPU;
  st = hvd_allreduce_async(&t, x, HVD_OP_SUM, "no_cuda.after", NULL, &h);
  if (st == HVD_SUCCESS) {
    st = hvd_wait(h);
    hvd_handle_free(h);
  }
  check(st == HVD_SUCCESS && x[3] == 4.0f * (float)hvd_size(), "a CPU allreduce afterwards");
  check(hvd_shutdown() == HVD_SUCCESS, "hvd_shutdown");
  printf("no-cuda: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
