/* The ABI consumer's shared host memory checks: hvd_mem_alloc, hvd_mem_free and hvd_mem_size
 * before hvd_init, by an allreduce and a broadcast with an engine, and after hvd_shutdown. C99. */
#include <stdint.h>

#include "abi_check.h"
#include "c_consumer.h"

static void check_bad_arguments(void) {
  void* out = NULL;
  int on_stack = 0;
  size_t bytes = 0;
  EXPECT_ERR(hvd_mem_alloc(0, &out), HVD_ERR_INVALID_ARGUMENT, "bytes is 0");
  CHECK(out == NULL);
  EXPECT_ERR(hvd_mem_alloc(16, NULL), HVD_ERR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERR(hvd_mem_free(&on_stack), HVD_ERR_INVALID_ARGUMENT, "not the start of a buffer");
  EXPECT_OK(hvd_mem_free(NULL));
  EXPECT_ERR(hvd_mem_size(&on_stack, NULL, &bytes), HVD_ERR_INVALID_ARGUMENT,
             "in no buffer of hvd_mem_alloc");
}

/* A zeroed buffer of the asked size, found from an interior pointer, refused as one to free. */
static float* allocate_and_look_up(size_t count) {
  void* out = NULL;
  void* base = NULL;
  size_t bytes = 0, i;
  float* values;
  EXPECT_OK(hvd_mem_alloc(count * sizeof(float), &out));
  values = (float*)out;
  CHECK(values != NULL);
  if (values == NULL) return NULL;
  for (i = 0; i < count && values[i] == 0.0f; ++i) {
  }
  CHECK(i == count);
  EXPECT_OK(hvd_mem_size(values + count - 1, &base, &bytes));
  CHECK(base == out && bytes == count * sizeof(float));
  EXPECT_OK(hvd_mem_size(values, NULL, &bytes)); /* base is optional */
  EXPECT_ERR(hvd_mem_size(values, &base, NULL), HVD_ERR_INVALID_ARGUMENT, "bytes is NULL");
  EXPECT_ERR(hvd_mem_free(values + 1), HVD_ERR_INVALID_ARGUMENT, "not the start of a buffer");
  return values;
}

void test_shared_memory(void) {
  const int64_t shape[1] = {1000};
  const hvd_op_args_t args = default_args();
  float* values;
  hvd_tensor_t t;
  op_result_t r;
  size_t bytes = 0;
  int64_t i;
  check_bad_arguments();
  values = allocate_and_look_up(1000);
  if (values == NULL) return;
  for (i = 0; i < shape[0]; ++i) values[i] = (float)i;
  t = make_tensor(values, HVD_FLOAT32, 1, shape);
  EXPECT_OK(hvd_init());
  r = run_allreduce(&t, values, HVD_OP_SUM, "abi.shm.sum", &args);
  expect_message_at(r.result, HVD_SUCCESS, r.message, NULL, __LINE__, "allreduce on shared memory");
  CHECK(values[999] == 999.0f); /* one rank: the sum is the input */
  EXPECT_OK(hvd_shutdown());
  values[999] = -1.0f; /* still mapped after shutdown */
  CHECK(values[999] == -1.0f && values[3] == 3.0f);
  EXPECT_OK(hvd_mem_size(values + 10, NULL, &bytes));
  CHECK(bytes == 4000);
  EXPECT_OK(hvd_mem_free(values));
  EXPECT_ERR(hvd_mem_size(values, NULL, &bytes), HVD_ERR_INVALID_ARGUMENT,
             "in no buffer of hvd_mem_alloc");
}
