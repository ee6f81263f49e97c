// Lifecycle cases: a forked child is refused, hvd_abort reaches every rank, and MPI re-init is
// refused clearly once hvdc finalized MPI itself.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// The child may not use its parent's engine: every call reports HVD_ERR_FORKED.
int child_checks() {
  int bad = 0;
  if (hvd_rank() != -1) bad |= 1;
  float x = 1.0f;
  std::vector<int64_t> shape = {1};
  hvd_tensor_t t = make_tensor(&x, HVD_FLOAT32, shape);
  hvd_handle_t h = 0;
  if (hvd_allreduce_async(&t, &x, HVD_OP_SUM, "forked", nullptr, &h) != HVD_ERR_FORKED) bad |= 2;
  if (hvd_shutdown() != HVD_ERR_FORKED) bad |= 4;
  return bad;
}

struct LocalCheck {
  int passed = 0, failed = 0;
  void check(bool ok, const char* what, const std::string& detail) {
    ok ? ++passed : ++failed;
    if (!ok) std::fprintf(stderr, "rank %d: FAIL %s: %s\n", hvd_rank(), what, detail.c_str());
  }
};

}  // namespace

void test_fork(Results& results) {
  pid_t pid = fork();
  if (pid == 0) _exit(child_checks());
  int status = 0;
  bool ok =
      pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string detail = "child exit status " + std::to_string(WEXITSTATUS(status));
  int32_t v = 1;
  std::vector<int64_t> shape = {1};
  hvd_tensor_t t = make_tensor(&v, HVD_INT32, shape);
  hvd_handle_t h = 0;
  ok = ok && hvd_allreduce_async(&t, &v, HVD_OP_SUM, "after.fork", nullptr, &h) == HVD_SUCCESS &&
       hvd_wait(h) == HVD_SUCCESS && v == hvd_size();
  if (h) hvd_handle_free(h);
  record(results, "fork.child_refused_parent_works", ok, detail);
}

// Rank 1 (or rank 0 alone) aborts while the others wait on a tensor it never submits.
int run_abort_suite() {
  if (hvd_init() != HVD_SUCCESS) return 1;
  const int rank = hvd_rank(), aborter = hvd_size() > 1 ? 1 : 0;
  LocalCheck c;
  float x = 1.0f;
  std::vector<int64_t> shape = {1};
  hvd_tensor_t t = make_tensor(&x, HVD_FLOAT32, shape);
  hvd_handle_t h = 0;
  hvd_status_t s;
  if (rank == aborter) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    c.check(hvd_abort("test abort reason") == HVD_SUCCESS, "hvd_abort", "");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s = hvd_allreduce_async(&t, &x, HVD_OP_SUM, "after.abort", nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
  } else {
    s = hvd_allreduce_async(&t, &x, HVD_OP_SUM, "pending.x", nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
  }
  const std::string message = hvd_last_error_message();
  if (h) hvd_handle_free(h);
  c.check(s == HVD_ERR_ABORTED, "op fails with HVD_ERR_ABORTED", hvd_status_string(s));
  c.check(message.find("rank " + std::to_string(aborter)) != std::string::npos &&
              message.find("test abort reason") != std::string::npos,
          "message names the rank and the reason", message);
  hvd_status_t async = HVD_SUCCESS;
  hvd_get_async_error(&async);
  c.check(async == HVD_ERR_ABORTED, "hvd_get_async_error", hvd_status_string(async));
  c.check(hvd_shutdown() == HVD_SUCCESS, "shutdown after abort", hvd_last_error_message());
  std::printf("abort (rank %d): %d passed, %d failed\n", rank, c.passed, c.failed);
  return c.failed == 0 ? 0 : 1;
}

// hvdc initialized MPI, so its shutdown finalized it: a second init must fail and say why.
int run_reinit_suite() {
  LocalCheck c;
  c.check(hvd_init() == HVD_SUCCESS, "first init", hvd_last_error_message());
  const int rank = hvd_rank();
  c.check(hvd_shutdown() == HVD_SUCCESS, "shutdown", hvd_last_error_message());
  const hvd_status_t again = hvd_init();
  const std::string message = hvd_last_error_message();
  c.check(again != HVD_SUCCESS && message.find("finalized") != std::string::npos,
          "re-init after hvdc finalized MPI fails clearly", message);
  c.check(hvd_is_initialized() == 0, "not initialized after the failed init", "");
  std::printf("reinit (rank %d): %d passed, %d failed\n", rank, c.passed, c.failed);
  return c.failed == 0 ? 0 : 1;
}

}  // namespace hvdc_test
