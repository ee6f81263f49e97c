/* A plain C consumer of include/hvdc.h. It calls every function of the C ABI as a single-rank job
 * (no launcher: hvd_init bootstraps a singleton) and checks what one rank can check. The same
 * file is built as C99 and as C11 with -Wall -Wextra -pedantic -Werror.
 *
 * Prints one "FAIL line N: ..." per failed check and a last line
 * "abi c_consumer: N passed, M failed"; exits 1 on any failure. */
#define _POSIX_C_SOURCE 200809L /* setenv, fork, nanosleep */

#include <hvdc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- Check bookkeeping ------------------------------------------------------------------- */
#include "abi_check.h"

static void sleep_millis(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* ---- Helpers ----------------------------------------------------------------------------- */
static hvd_tensor_t make_tensor(void* data, int32_t dtype, int32_t ndim, const int64_t* shape) {
  hvd_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.device.type = HVD_DEVICE_CPU;
  t.device.id = 0;
  return t;
}

static hvd_op_args_t default_args(void) {
  hvd_op_args_t a;
  memset(&a, 0x5a, sizeof(a));
  hvd_op_args_init(&a, sizeof(a));
  return a;
}

typedef struct op_result_t {
  hvd_status_t submit; /* what hvd_allreduce_async returned */
  hvd_status_t result; /* hvd_wait's status if submitted, else the submit status */
  char message[1024];  /* hvd_last_error_message() right after the failing call */
} op_result_t;

/* Submits one allreduce, waits for it and frees its handle. */
static op_result_t run_allreduce(const hvd_tensor_t* input, void* output, int32_t reduce_op,
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

static int floats_equal(const float* a, const float* b, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (a[i] != b[i]) return 0;
  }
  return 1;
}

static int floats_scaled(const float* out, const float* in, size_t n, float factor) {
  size_t i;
  for (i = 0; i < n; ++i) {
    if (out[i] != in[i] * factor) return 0;
  }
  return 1;
}

/* ---- Callbacks --------------------------------------------------------------------------- */
/* The library serializes log callbacks; results are read after hvd_shutdown joined the engine. */
typedef struct log_capture_t {
  int magic;
  int lines;
  int bad_levels;
  int empty_lines;
} log_capture_t;

static void capture_log(void* user_data, int32_t level, const char* message) {
  log_capture_t* c = (log_capture_t*)user_data;
  if (c == NULL || c->magic != 0x10c) return;
  ++c->lines;
  if (level < 0 || level > 4) ++c->bad_levels;
  if (message == NULL || message[0] == '\0') ++c->empty_lines;
}

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
      HVD_ERR_FORKED};
  const size_t count = sizeof(kCodes) / sizeof(kCodes[0]);
  size_t i, j;
  const char* unknown = hvd_status_string(12345);
  /* Frozen values. */
  CHECK(HVD_SUCCESS == 0 && HVD_IN_PROGRESS == 1 && HVD_ERR_INVALID_ARGUMENT == -1);
  CHECK(HVD_ERR_INVALID_HANDLE == -7 && HVD_ERR_ABORTED == -10 && HVD_ERR_FORKED == -17);
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

/* ---- hvd_tensor_from_dlpack -------------------------------------------------------------- */
static hvd_dl_tensor_t make_dl(void* data, uint8_t code, uint8_t bits, int32_t ndim,
                               int64_t* shape) {
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

static void test_dlpack(void) {
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

/* ---- Configuration, environment, logging ------------------------------------------------- */
static void test_config(void) {
  hvd_config_t* cfg = NULL;
  EXPECT_ERR(hvd_config_create(NULL), HVD_ERR_INVALID_ARGUMENT, "out");
  EXPECT_OK(hvd_config_create(&cfg));
  CHECK(cfg != NULL);
  if (cfg == NULL) return;
  /* Unknown keys: unsupported, with a message that says why. */
  EXPECT_ERR(hvd_config_set_int(cfg, 999, 1), HVD_ERR_UNSUPPORTED, "999");
  EXPECT_ERR(hvd_config_set_str(cfg, 999, "x"), HVD_ERR_UNSUPPORTED, "999");
  EXPECT_ERR(hvd_config_set_int(cfg, -1, 1), HVD_ERR_UNSUPPORTED, NULL);
  /* Typed setters: a string key through set_int and an int key through set_str. */
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_HOSTNAME, 1), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_HOSTNAME");
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_BOOTSTRAP, 1), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_BOOTSTRAP");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_LOG_LEVEL, "info"), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_LOG_LEVEL");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_SPIN_MICROS, "10"), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_SPIN_MICROS");
  /* Bad values name the knob. */
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, 9), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_LOG_LEVEL");
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, -1), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_LOG_LEVEL");
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_SPIN_MICROS, -5), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_SPIN_MICROS");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "carrier-pigeon"), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_BOOTSTRAP");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, NULL), HVD_ERR_INVALID_ARGUMENT, "value");
  EXPECT_ERR(hvd_config_set_int(NULL, HVD_CFG_LOG_LEVEL, 2), HVD_ERR_INVALID_ARGUMENT, "config");
  EXPECT_ERR(hvd_config_set_str(NULL, HVD_CFG_HOSTNAME, "h"), HVD_ERR_INVALID_ARGUMENT, "config");
  /* Good values. */
  EXPECT_OK(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, 5));
  EXPECT_OK(hvd_config_set_int(cfg, HVD_CFG_SPIN_MICROS, 0));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_HOSTNAME, "abi-host"));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "singleton"));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "auto")); /* the last value wins */
  hvd_config_destroy(cfg);
}

/* Saves, replaces and restores an environment variable. */
typedef struct saved_env_t {
  const char* name;
  char value[256];
  int was_set;
} saved_env_t;

static saved_env_t save_env(const char* name) {
  saved_env_t s;
  const char* v = getenv(name);
  s.name = name;
  s.was_set = v != NULL;
  snprintf(s.value, sizeof(s.value), "%s", v != NULL ? v : "");
  unsetenv(name);
  return s;
}

static void restore_env(const saved_env_t* s) {
  if (s->was_set) {
    setenv(s->name, s->value, 1);
  } else {
    unsetenv(s->name);
  }
}

static void test_env_and_log_callback(void) {
  saved_env_t level = save_env("HVDC_LOG_LEVEL");
  saved_env_t horovod_level = save_env("HOROVOD_LOG_LEVEL");
  hvd_config_t* cfg = NULL;
  log_capture_t capture;
  memset(&capture, 0, sizeof(capture));
  capture.magic = 0x10c;

  /* A bad log level in the environment fails hvd_init and names the variable. */
  setenv("HVDC_LOG_LEVEL", "loud", 1);
  EXPECT_ERR(hvd_init(), HVD_ERR_INVALID_ARGUMENT, "HVDC_LOG_LEVEL");
  CHECK(hvd_is_initialized() == 0);
  CHECK(hvd_rank() == -1);
  unsetenv("HVDC_LOG_LEVEL");
  /* Horovod's spelling is read too. */
  setenv("HOROVOD_LOG_LEVEL", "loud", 1);
  EXPECT_ERR(hvd_init(), HVD_ERR_INVALID_ARGUMENT, "LOG_LEVEL");
  CHECK(hvd_is_initialized() == 0);
  unsetenv("HOROVOD_LOG_LEVEL");

  /* The config object overrides the (still bad) environment: trace level, lines captured. */
  setenv("HVDC_LOG_LEVEL", "loud", 1);
  EXPECT_OK(hvd_config_create(&cfg));
  if (cfg == NULL) {
    restore_env(&level);
    restore_env(&horovod_level);
    return;
  }
  EXPECT_OK(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, 0));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "singleton"));
  EXPECT_OK(hvd_set_log_callback(capture_log, &capture));
  EXPECT_OK(hvd_init_with_config(cfg));
  hvd_config_destroy(cfg); /* the engine does not keep the config */
  CHECK(hvd_is_initialized() == 1);
  CHECK(hvd_size() == 1);
  EXPECT_OK(hvd_shutdown());
  EXPECT_OK(hvd_set_log_callback(NULL, NULL)); /* back to stderr */
  CHECK(capture.lines >= 1);
  CHECK(capture.bad_levels == 0);
  CHECK(capture.empty_lines == 0);
  if (capture.lines < 1) printf("  (no log line reached the callback at level 0)\n");
  restore_env(&level);
  restore_env(&horovod_level);
}

/* ---- Allreduce on one rank --------------------------------------------------------------- */
static void test_allreduce(void) {
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
  /* A CUDA tensor where CUDA is compiled out: unsupported, at submit or at wait. */
  if (hvd_has_feature(HVD_FEATURE_CUDA) == 0) {
    memcpy(src, in, sizeof(in));
    t.device.type = HVD_DEVICE_CUDA;
    r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.cuda", NULL);
    expect_message_at(r.result, HVD_ERR_UNSUPPORTED, r.message, NULL, __LINE__,
                      "CUDA tensor without CUDA support");
    t.device.type = HVD_DEVICE_CPU;
    /* The engine is still usable afterwards. */
    r = run_allreduce(&t, dst, HVD_OP_SUM, "abi.after_cuda", NULL);
    expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "allreduce after CUDA");
  }
}

/* ---- Bad arguments ----------------------------------------------------------------------- */
static void test_bad_arguments(void) {
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

/* ---- Handles ----------------------------------------------------------------------------- */
static void test_handles(void) {
  float data[4] = {1, 2, 3, 4};
  float out[4];
  const int64_t shape[1] = {4};
  hvd_tensor_t t = make_tensor(data, HVD_FLOAT32, 1, shape);
  hvd_handle_t h = 0, h2 = 0, hs[3] = {0, 0, 0};
  int32_t done = 0;
  int spins;
  hvd_status_t st = HVD_IN_PROGRESS;
  char name[32];
  size_t i;

  /* hvd_test polls without blocking until the op ends, then returns its status. */
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.test", NULL, &h));
  CHECK(h != 0);
  for (spins = 0; spins < 10000; ++spins) {
    st = hvd_test(h, &done);
    if (st != HVD_SUCCESS || done) break;
    sleep_millis(1);
  }
  CHECK(done == 1);
  CHECK(st == HVD_SUCCESS);
  EXPECT_ERR(hvd_test(h, NULL), HVD_ERR_INVALID_ARGUMENT, "done");
  /* Neither test nor wait frees: both may be repeated. */
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_wait(h));
  done = 0;
  EXPECT_OK(hvd_test(h, &done));
  CHECK(done == 1);
  CHECK(out[0] == 1 && out[3] == 4);
  EXPECT_OK(hvd_handle_free(h));
  /* Freed: stale and double-freed handles are reported. */
  EXPECT_ERR(hvd_handle_free(h), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_ERR(hvd_wait(h), HVD_ERR_INVALID_HANDLE, NULL);
  done = 42;
  EXPECT_ERR(hvd_test(h, &done), HVD_ERR_INVALID_HANDLE, NULL);
  CHECK(done == 42);
  /* A new op (likely in the same slot) gets a different handle; the old one stays stale. */
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.test", NULL, &h2));
  CHECK(h2 != 0 && h2 != h);
  EXPECT_ERR(hvd_wait(h), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_ERR(hvd_handle_free(h), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_OK(hvd_wait(h2));
  EXPECT_OK(hvd_handle_free(h2));
  EXPECT_ERR(hvd_handle_free(h2), HVD_ERR_INVALID_HANDLE, NULL);
  /* Handle 0 is never valid; neither is a made-up one. */
  EXPECT_ERR(hvd_wait(0), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_ERR(hvd_test(0, &done), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_ERR(hvd_handle_free(0), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_ERR(hvd_wait((hvd_handle_t)0x7fff123400000007ull), HVD_ERR_INVALID_HANDLE, NULL);

  /* hvd_wait_all. */
  for (i = 0; i < 3; ++i) {
    snprintf(name, sizeof(name), "abi.wait_all.%u", (unsigned)i);
    EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, name, NULL, &hs[i]));
  }
  EXPECT_OK(hvd_wait_all(hs, 3));
  EXPECT_OK(hvd_wait_all(hs, 3)); /* nothing was freed */
  EXPECT_OK(hvd_wait_all(NULL, 0));
  EXPECT_OK(hvd_wait_all(hs, 0));
  EXPECT_ERR(hvd_wait_all(NULL, 2), HVD_ERR_INVALID_ARGUMENT, "handles");
  EXPECT_OK(hvd_handle_free(hs[1]));
  EXPECT_ERR(hvd_wait_all(hs, 3), HVD_ERR_INVALID_HANDLE, NULL);
  EXPECT_OK(hvd_handle_free(hs[0]));
  EXPECT_OK(hvd_handle_free(hs[2]));
  hs[1] = 0;
  EXPECT_ERR(hvd_wait_all(hs + 1, 1), HVD_ERR_INVALID_HANDLE, NULL);

  /* A name can be reused once its op is done. */
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.reuse", NULL, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.reuse", NULL, &h2));
  EXPECT_OK(hvd_wait(h2));
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_OK(hvd_handle_free(h2));

  /* hvd_handle_free right after submission (it waits for the op). */
  EXPECT_OK(hvd_allreduce_async(&t, out, HVD_OP_SUM, "abi.free_early", NULL, &h));
  EXPECT_OK(hvd_handle_free(h));
  EXPECT_ERR(hvd_wait(h), HVD_ERR_INVALID_HANDLE, NULL);
}

/* ---- fork() after hvd_init --------------------------------------------------------------- */
static void test_fork(void) {
  pid_t pid;
  int wstatus = 0;
  fflush(stdout);
  pid = fork();
  CHECK(pid >= 0);
  if (pid < 0) return;
  if (pid == 0) {
    /* The child: every call fails with HVD_ERR_FORKED. Bit i set = check i failed. */
    float x = 1.0f, y = 0.0f;
    hvd_tensor_t t = make_tensor(&x, HVD_FLOAT32, 0, NULL);
    hvd_handle_t h = 0;
    hvd_status_t async = 0;
    int bits = 0;
    if (hvd_allreduce_async(&t, &y, HVD_OP_SUM, "abi.forked", NULL, &h) != HVD_ERR_FORKED) {
      bits |= 1;
    }
    if (hvd_get_async_error(&async) != HVD_ERR_FORKED) bits |= 2;
    if (hvd_init() != HVD_ERR_FORKED) bits |= 4;
    if (hvd_shutdown() != HVD_ERR_FORKED) bits |= 8;
    if (hvd_last_error_message()[0] == '\0') bits |= 16;
    _exit(bits);
  }
  CHECK(waitpid(pid, &wstatus, 0) == pid);
  CHECK(WIFEXITED(wstatus));
  if (WIFEXITED(wstatus)) {
    const int bits = WEXITSTATUS(wstatus);
    CHECK((bits & 1) == 0);  /* hvd_allreduce_async in the child -> HVD_ERR_FORKED */
    CHECK((bits & 2) == 0);  /* hvd_get_async_error in the child -> HVD_ERR_FORKED */
    CHECK((bits & 4) == 0);  /* hvd_init in the child -> HVD_ERR_FORKED */
    CHECK((bits & 8) == 0);  /* hvd_shutdown in the child -> HVD_ERR_FORKED */
    CHECK((bits & 16) == 0); /* with a message */
  }
  /* The parent's engine is unaffected. */
  CHECK(hvd_is_initialized() == 1);
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
  test_abort();

  printf("abi c_consumer: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
