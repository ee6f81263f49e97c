/* The ABI consumer's checks of handles (test, wait, wait_all, free, stale and double-freed
 * handles, name reuse) and of every call failing with HVD_ERR_FORKED in a forked child. */
#define _POSIX_C_SOURCE 200809L /* fork */

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi_check.h"
#include "c_consumer.h"

void test_handles(void) {
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
void test_fork(void) {
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
