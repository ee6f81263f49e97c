/* A plain C consumer of include/hvdc.h. Together with the other c_consumer_*.c files (one per
 * group of checks, see c_consumer.h) it calls every function of the C ABI as a single-rank job
 * (no launcher: hvd_init bootstraps a singleton) and checks what one rank can check. This file
 * holds versions, status text, features, the lifecycle, hvd_abort and main(). The files are
 * built as C99 and as C11 with -Wall -Wextra -pedantic -Werror.
 *
 * Prints one "FAIL line N: ..." per failed check and a last line
 * "abi c_consumer: N passed, M failed"; exits 1 on any failure. */
#include <stdio.h>
#include <string.h>

#include "abi_check.h"
#include "c_consumer.h"

/* Completion callbacks run on the engine thread; read after hvd_shutdown joined it. */
typedef struct done_capture_t {
  int calls;
  hvd_handle_t handle;
  hvd_status_t status;
} done_capture_t;

static void record_done(void* user_data, hvd_handle_t handle, hvd_status_t status) {
  done_capture_t* d = (done_capture_t*)user_data;
  ++d->calls;
  d->handle = handle;
  d->status = status;
}

/* ---- Versions, status text, features ----------------------------------------------------- */
static void test_versions(void) {
  char prefix[64];
  const char* v = hvd_version_string();
  size_t n;
  CHECK(HVDC_VERSION_CODE ==
        HVDC_VERSION_MAJOR * 10000 + HVDC_VERSION_MINOR * 100 + HVDC_VERSION_PATCH);
  CHECK(hvd_abi_version() == HVDC_ABI_VERSION);
  CHECK(HVDC_ABI_VERSION == 0); /* equals the soname major, libhvdc.so.0 */
  CHECK(v != NULL);
  if (v == NULL) return;
  n = (size_t)snprintf(prefix, sizeof(prefix), "%d.%d.%d", HVDC_VERSION_MAJOR, HVDC_VERSION_MINOR,
                       HVDC_VERSION_PATCH);
  CHECK(strncmp(v, prefix, n) == 0);
  CHECK(v[n] == '\0' || v[n] == ' ');
  CHECK(strcmp(hvd_version_string(), v) == 0);
}

static void test_status_strings(void) {
  static const hvd_status_t kCodes[] = {
      HVD_SUCCESS,           HVD_IN_PROGRESS,         HVD_ERR_INVALID_ARGUMENT,
      HVD_ERR_INVALID_USAGE, HVD_ERR_NOT_INITIALIZED, HVD_ERR_UNSUPPORTED,
      HVD_ERR_SYSTEM,        HVD_ERR_INTERNAL,        HVD_ERR_INVALID_HANDLE,
      HVD_ERR_MISMATCH,      HVD_ERR_DUPLICATE_NAME,  HVD_ERR_ABORTED,
      HVD_ERR_TIMEOUT,       HVD_ERR_PEER_FAILURE,    HVD_ERR_SHUT_DOWN,
      HVD_ERR_OUT_OF_MEMORY, HVD_ERR_TRANSPORT,       HVD_ERR_BOOTSTRAP,
      HVD_ERR_FORKED,        HVD_ERR_DEVICE};
  const size_t count = sizeof(kCodes) / sizeof(kCodes[0]);
  size_t i, j;
  const char* unknown = hvd_status_string(12345);
  /* Frozen values. */
  CHECK(HVD_SUCCESS == 0 && HVD_IN_PROGRESS == 1 && HVD_ERR_INVALID_ARGUMENT == -1);
  CHECK(HVD_ERR_INVALID_HANDLE == -7 && HVD_ERR_ABORTED == -10 && HVD_ERR_FORKED == -17);
  CHECK(HVD_ERR_DEVICE == -18 && HVD_OP_STREAM_ORDERED == 1 && HVD_OP_HOST_PATH == 2);
  CHECK(HVD_UINT8 == 0 && HVD_FLOAT32 == 7 && HVD_BOOL == 9 && HVD_BFLOAT16 == 10);
  CHECK(HVD_OP_AVERAGE == 0 && HVD_OP_SUM == 1 && HVD_OP_MIN == 3 && HVD_OP_PRODUCT == 5);
  CHECK(HVD_DEVICE_CPU == 1 && HVD_DEVICE_CUDA == 2 && HVD_MAX_NDIM == 32);
  CHECK(unknown != NULL && strcmp(unknown, "unknown status") == 0);
  for (i = 0; i < count; ++i) {
    const char* s = hvd_status_string(kCodes[i]);
    int distinct = 1;
    check_at(s != NULL && s[0] != '\0', __LINE__, "hvd_status_string(code) is non-empty");
    check_at(s != NULL && strcmp(s, "unknown status") != 0, __LINE__,
             "hvd_status_string(known code) is not \"unknown status\"");
    for (j = 0; j < i && s != NULL; ++j) {
      const char* other = hvd_status_string(kCodes[j]);
      if (other != NULL && strcmp(s, other) == 0) distinct = 0;
    }
    check_at(distinct, __LINE__, "every status code has its own text");
    if (s == NULL || s[0] == '\0') printf("  (status %d)\n", (int)kCodes[i]);
  }
}

/* ---- hvd_device_count: a count, or 0 and the reason (always so without CUDA). ---- */
static void test_device_count(void) {
  int32_t count = -1;
  const hvd_status_t st = hvd_device_count(&count);
  if (st == HVD_SUCCESS) {
    CHECK(count > 0);
  } else {
    CHECK(st == HVD_ERR_UNSUPPORTED && count == 0 && hvd_last_error_message()[0] != '\0');
  }
  if (hvd_has_feature(HVD_FEATURE_CUDA) == 0) {
    CHECK(st == HVD_ERR_UNSUPPORTED && strstr(hvd_last_error_message(), "-Dcuda=enabled"));
  }
  EXPECT_ERR(hvd_device_count(NULL), HVD_ERR_INVALID_ARGUMENT, "count");
}

static void test_features(void) {
  const int32_t features[] = {HVD_FEATURE_UCX, HVD_FEATURE_MPI, HVD_FEATURE_CUDA, HVD_FEATURE_NCCL};
  const char* v = hvd_version_string();
  size_t i;
  for (i = 0; i < sizeof(features) / sizeof(features[0]); ++i) {
    const int32_t f = hvd_has_feature(features[i]);
    check_at(f == 0 || f == 1, __LINE__, "hvd_has_feature(HVD_FEATURE_*) is 0 or 1");
  }
  CHECK(hvd_has_feature(99) == 0);
  CHECK(hvd_has_feature(-1) == 0);
  /* The version string lists the compiled features ("0.1.0 +ucx +mpi"). */
  CHECK(hvd_has_feature(HVD_FEATURE_UCX) == (strstr(v, " +ucx") != NULL));
  CHECK(hvd_has_feature(HVD_FEATURE_MPI) == (strstr(v, " +mpi") != NULL));
  CHECK(hvd_has_feature(HVD_FEATURE_CUDA) == (strstr(v, " +cuda") != NULL));
  CHECK(hvd_has_feature(HVD_FEATURE_NCCL) == hvd_has_feature(HVD_FEATURE_CUDA));
  test_device_count();
}

/* ---- Before hvd_init --------------------------------------------------------------------- */
static void test_before_init(void) {
  float data[2] = {1.0f, 2.0f};
  const int64_t shape[1] = {2};
  hvd_tensor_t t = make_tensor(data, HVD_FLOAT32, 1, shape);
  hvd_handle_t h = 77;
  hvd_status_t async = 55;
  CHECK(hvd_is_initialized() == 0);
  CHECK(hvd_rank() == -1);
  CHECK(hvd_size() == -1);
  CHECK(hvd_local_rank() == -1);
  CHECK(hvd_local_size() == -1);
  CHECK(hvd_cross_rank() == -1);
  CHECK(hvd_cross_size() == -1);
  /* The first failure of this thread: a non-empty message must come with it. */
  EXPECT_ERR(hvd_allreduce_async(&t, data, HVD_OP_SUM, "abi.before_init", NULL, &h),
             HVD_ERR_NOT_INITIALIZED, NULL);
  CHECK(strlen(hvd_last_error_message()) > 0);
  CHECK(h == 77); /* outputs are written only on success */
  EXPECT_ERR(hvd_get_async_error(&async), HVD_ERR_NOT_INITIALIZED, NULL);
  CHECK(async == 55);
  EXPECT_ERR(hvd_abort("before init"), HVD_ERR_NOT_INITIALIZED, NULL);
  /* Shutting down what was never started is harmless. */
  EXPECT_OK(hvd_shutdown());
  CHECK(hvd_is_initialized() == 0);
}

/* ---- hvd_op_args_init -------------------------------------------------------------------- */
static void test_op_args(void) {
  hvd_op_args_t a;
  unsigned char sentinel[sizeof(hvd_op_args_t)];
  const size_t old_size = offsetof(hvd_op_args_t, prescale_factor);
  memset(&a, 0x5a, sizeof(a));
  EXPECT_OK(hvd_op_args_init(&a, sizeof(a)));
  CHECK(a.struct_size == sizeof(hvd_op_args_t));
  CHECK(a.process_set == 0);
  CHECK(a.prescale_factor == 1.0);
  CHECK(a.postscale_factor == 1.0);
  CHECK(a.on_done == NULL);
  CHECK(a.on_done_user_data == NULL);
  CHECK(a.cuda_stream == NULL && a.flags == 0);
  EXPECT_ERR(hvd_op_args_init(NULL, sizeof(a)), HVD_ERR_INVALID_ARGUMENT, "args");
  EXPECT_ERR(hvd_op_args_init(&a, 0), HVD_ERR_INVALID_ARGUMENT, "struct_size");
  /* A caller compiled against an older, shorter struct: nothing past its size is written. */
  memset(&a, 0x5a, sizeof(a));
  memset(sentinel, 0x5a, sizeof(sentinel));
  EXPECT_OK(hvd_op_args_init(&a, old_size));
  CHECK(a.struct_size == old_size);
  CHECK(a.process_set == 0);
  CHECK(memcmp((const unsigned char*)&a + old_size, sentinel + old_size, sizeof(a) - old_size) ==
        0);
}

/* ---- Lifecycle --------------------------------------------------------------------------- */
static void check_topology(int initialized) {
  if (initialized) {
    CHECK(hvd_is_initialized() == 1);
    CHECK(hvd_rank() == 0);
    CHECK(hvd_size() == 1);
    CHECK(hvd_local_rank() == 0);
    CHECK(hvd_local_size() == 1);
    CHECK(hvd_cross_rank() == 0);
    CHECK(hvd_cross_size() == 1);
  } else {
    CHECK(hvd_is_initialized() == 0);
    CHECK(hvd_rank() == -1);
    CHECK(hvd_size() == -1);
    CHECK(hvd_local_rank() == -1);
    CHECK(hvd_local_size() == -1);
    CHECK(hvd_cross_rank() == -1);
    CHECK(hvd_cross_size() == -1);
  }
}

static void test_lifecycle_and_ops(void) {
  float data[3] = {1, 2, 3};
  float out[3];
  const int64_t shape[1] = {3};
  hvd_tensor_t t = make_tensor(data, HVD_FLOAT32, 1, shape);
  hvd_config_t* cfg = NULL;
  hvd_handle_t kept = 0, pending = 0, h = 0;
  hvd_status_t async = 55;
  hvd_status_t st;
  int32_t done = 0;
  done_capture_t on_done;
  hvd_op_args_t args;
  op_result_t r;
  memset(&on_done, 0, sizeof(on_done));

  EXPECT_OK(hvd_init());
  check_topology(1);
  /* Init twice is a usage error and leaves the engine running. */
  EXPECT_ERR(hvd_init(), HVD_ERR_INVALID_USAGE, NULL);
  EXPECT_OK(hvd_config_create(&cfg));
  EXPECT_ERR(hvd_init_with_config(cfg), HVD_ERR_INVALID_USAGE, NULL);
  hvd_config_destroy(cfg);
  check_topology(1);

  EXPECT_OK(hvd_get_async_error(&async));
  CHECK(async == HVD_SUCCESS);
  EXPECT_ERR(hvd_get_async_error(NULL), HVD_ERR_INVALID_ARGUMENT, "status");

  test_allreduce();
  test_bad_arguments();
  test_handles();
  test_fork();

  /* A completion callback, checked once the engine thread has been joined. */
  args = default_args();
  args.on_done = record_done;
  args.on_done_user_data = &on_done;
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.on_done", &args, &h));
  EXPECT_OK(hvd_wait(h));
  /* Handles outlive hvd_shutdown: one finished op, one perhaps still pending. */
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.kept", NULL, &kept));
  EXPECT_OK(hvd_wait(kept));
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.pending", NULL, &pending));
  EXPECT_OK(hvd_get_async_error(&async));
  CHECK(async == HVD_SUCCESS);

  EXPECT_OK(hvd_shutdown());
  check_topology(0);
  CHECK(on_done.calls == 1);
  CHECK(on_done.handle == h);
  CHECK(on_done.status == HVD_SUCCESS);
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_OK(hvd_wait(kept));
  done = 0;
  EXPECT_OK(hvd_test(kept, &done));
  CHECK(done == 1);
  EXPECT_OK(hvd_handle_free(kept));
  EXPECT_ERR(hvd_handle_free(kept), HVD_ERR_INVALID_HANDLE, NULL);
  st = hvd_wait(pending); /* it ran before shutdown, or shutdown failed it */
  CHECK(st == HVD_SUCCESS || st == HVD_ERR_SHUT_DOWN);
  EXPECT_OK(hvd_handle_free(pending));
  /* After shutdown: not initialized again. */
  h = 99;
  EXPECT_ERR(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.after", NULL, &h),
             HVD_ERR_NOT_INITIALIZED, NULL);
  CHECK(h == 99);
  EXPECT_ERR(hvd_get_async_error(&async), HVD_ERR_NOT_INITIALIZED, NULL);
  EXPECT_OK(hvd_shutdown()); /* twice is harmless */

  /* Re-init (singleton bootstrap again), use, shut down. */
  EXPECT_OK(hvd_init());
  check_topology(1);
  r = run_allreduce(&t, out, HVD_OP_SUM, "abi.reinit", NULL);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "allreduce after re-init");
  CHECK(floats_equal(out, data, 3));
  EXPECT_OK(hvd_shutdown());
  check_topology(0);
  EXPECT_OK(hvd_shutdown());
}

/* ---- hvd_abort --------------------------------------------------------------------------- */
static void test_abort(void) {
  float data[3] = {1, 2, 3};
  float out[3];
  const int64_t shape[1] = {3};
  hvd_tensor_t t = make_tensor(data, HVD_FLOAT32, 1, shape);
  hvd_status_t async = 55;
  op_result_t r;

  EXPECT_OK(hvd_init());
  EXPECT_OK(hvd_abort("why-abi-test"));
  /* The next op fails with the reason, either at submission or at wait. */
  r = run_allreduce(&t, out, HVD_OP_SUM, "abi.after_abort", NULL);
  expect_message_at(r.result, HVD_ERR_ABORTED, r.message, "why-abi-test", __LINE__,
                    "allreduce after hvd_abort");
  EXPECT_OK(hvd_get_async_error(&async));
  CHECK(async == HVD_ERR_ABORTED);
  /* Later ops keep failing the same way until hvd_shutdown. */
  r = run_allreduce(&t, out, HVD_OP_SUM, "abi.after_abort.2", NULL);
  expect_message_at(r.result, HVD_ERR_ABORTED, r.message, "why-abi-test", __LINE__,
                    "second allreduce after hvd_abort");
  CHECK(hvd_is_initialized() == 1);
  EXPECT_OK(hvd_shutdown());
  check_topology(0);

  /* A fresh engine starts clean. */
  EXPECT_OK(hvd_init());
  async = 55;
  EXPECT_OK(hvd_get_async_error(&async));
  CHECK(async == HVD_SUCCESS);
  r = run_allreduce(&t, out, HVD_OP_SUM, "abi.after_abort_reinit", NULL);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__,
                    "allreduce after abort, shutdown and re-init");
  EXPECT_OK(hvd_shutdown());
}

int main(void) {
  const char* first = hvd_last_error_message();
  CHECK(first != NULL && first[0] == '\0'); /* no failure yet */

  test_versions();
  test_status_strings();
  test_features();
  test_before_init();
  test_op_args();
  test_dlpack();
  test_config();
  test_env_and_log_callback();
  test_lifecycle_and_ops();
  EXPECT_OK(hvd_init());
  test_gather_broadcast_barrier();
  EXPECT_OK(hvd_shutdown());
  test_shared_memory();
  test_abort();

  printf("abi c_consumer: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
