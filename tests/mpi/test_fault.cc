// Fault cases that end the engine's work, one per process (run with HVDC_TIMEOUT=2 at np 3):
//   fault-stop negotiation: rank 1 stops itself (SIGSTOP) before an allreduce;
//   fault-stop transfer:    rank 1 stops itself while a large allreduce runs;
//   fault-stop kill:        rank 1 dies (SIGKILL) before an allreduce.
// Every survivor must get HVD_ERR_TIMEOUT (or the notice of a peer that detected it) naming
// rank 1 within HVDC_TIMEOUT + 5 s, and hvd_shutdown must return. A survivor then resumes rank
// 1 (SIGCONT), whose next op must fail too. Verdicts are per rank (hvdc cannot agree on them once
// its work has ended): each rank prints PASS or FAIL and exits 0 or 1.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {

namespace {

using Clock = std::chrono::steady_clock;

int g_rank = -1;  // hvd_rank() is -1 after hvd_shutdown

int verdict(bool ok, const std::string& what) {
  std::printf("%s fault.%s (rank %d)\n", ok ? "PASS" : "FAIL", what.c_str(), g_rank);
  std::fflush(stdout);
  return ok ? 0 : 1;
}

// Every rank's pid, through hvdc itself while it still works.
std::vector<int64_t> all_pids() {
  int64_t mine = getpid();
  hvd_tensor_t t = make_tensor(&mine, HVD_INT64, {1});
  int64_t shape[1] = {1};
  t.shape = shape;
  hvd_handle_t h = 0;
  std::vector<int64_t> pids;
  if (hvd_allgather_async(&t, "fault.pids", nullptr, &h) != HVD_SUCCESS) return pids;
  hvd_tensor_t out;
  if (hvd_wait(h) == HVD_SUCCESS && hvd_handle_output(h, &out) == HVD_SUCCESS) {
    const int64_t* p = static_cast<const int64_t*>(out.data);
    pids.assign(p, p + out.shape[0]);
  }
  hvd_handle_free(h);
  return pids;
}

// Allreduces until one fails; returns its status (success if none did within `tries`).
hvd_status_t allreduce_until_failure(size_t count, int tries) {
  std::vector<float> buf;
  for (int i = 0; i < tries; ++i) {
    hvd_status_t s =
        allreduce_constant("fault.op." + std::to_string(i), HVD_OP_SUM, count, 1.0f, &buf);
    if (s != HVD_SUCCESS) return s;
  }
  return HVD_SUCCESS;
}

int survivor(const std::vector<int64_t>& pids, size_t count, int timeout, bool resume) {
  const auto start = Clock::now();
  const hvd_status_t s = allreduce_until_failure(count, 200);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string message = hvd_last_error_message();
  std::printf("rank %d: %s after %.2f s: %s\n", hvd_rank(), hvd_status_string(s), waited,
              message.c_str());
  const bool typed = s == HVD_ERR_TIMEOUT || s == HVD_ERR_PEER_FAILURE;
  const bool names =
      message.find("rank(s) 1") != std::string::npos || message.find("rank 1") != std::string::npos;
  int rc = verdict(typed && names && waited < timeout + 5.0, "survivor_gets_typed_error");
  hvd_status_t async = HVD_SUCCESS;
  rc |= verdict(hvd_get_async_error(&async) == HVD_SUCCESS && async == s, "async_error_is_first");
  if (resume && hvd_rank() == 0 && pids.size() > 1) kill(static_cast<pid_t>(pids[1]), SIGCONT);
  const auto before = Clock::now();
  hvd_shutdown();
  const double took = std::chrono::duration<double>(Clock::now() - before).count();
  rc |= verdict(took < timeout + 10.0, "shutdown_returns");
  return rc;
}

// Rank 1 after it was resumed: the others have given up on it, so its next op fails.
int stopped_rank() {
  const hvd_status_t s = allreduce_until_failure(16, 50);
  std::printf("rank 1 resumed: %s: %s\n", hvd_status_string(s), hvd_last_error_message());
  int rc = verdict(s != HVD_SUCCESS, "resumed_rank_fails");
  hvd_shutdown();
  return rc;
}

}  // namespace

int run_fault_stop_suite(const char* phase) {
  const char* env = std::getenv("HVDC_TIMEOUT");
  const int timeout = env != nullptr ? std::atoi(env) : 60;
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  g_rank = hvd_rank();
  const std::vector<int64_t> pids = all_pids();
  if (static_cast<int>(pids.size()) != hvd_size() || hvd_size() < 3) {
    return verdict(false, "setup (needs np >= 3)");
  }
  const bool transfer = std::strcmp(phase, "transfer") == 0;
  const bool killed = std::strcmp(phase, "kill") == 0;
  if (killed && hvd_rank() == 1) kill(getpid(), SIGKILL);
  const size_t count = transfer ? (size_t{16} << 20) : 16;  // 64 MiB: long enough to stop in
  if (hvd_rank() == 1) {
    if (!transfer) {
      kill(getpid(), SIGSTOP);
    } else {
      std::thread stopper([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        kill(getpid(), SIGSTOP);
      });
      std::vector<float> buf;
      allreduce_constant("fault.op.0", HVD_OP_SUM, count, 1.0f, &buf);
      stopper.join();
    }
    return stopped_rank();
  }
  return survivor(pids, count, timeout, /*resume=*/!killed);
}

}  // namespace hvdc_test
