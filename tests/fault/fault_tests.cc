// The fault suite's program: one fault per run, chosen by the first argument. Every rank agrees
// on a moment T through hvdc itself; at T the culprit rank does its fault while the others wait
// in collectives. Each survivor must get the typed error naming the culprit within the case's
// bound, hvd_get_async_error must return it, and hvd_shutdown must return (within 1 s and with
// that error when the culprit died, exited or stopped). Verdicts are per rank
// (hvdc cannot agree on them once its work has ended): each rank prints PASS or FAIL lines, one
// "TTE ..." line with its time to error (read by bench/fault_time_to_error.py), and "DONE rank R"
// last; it exits 0 when its verdicts passed. Cases (run by run_case.sh):
//   kill-negotiation  rank 1 dies (SIGKILL) while the others wait for it in negotiation;
//   kill-transfer     rank 1 dies while 64 MiB allreduces run;
//   exit              rank 1 calls exit(0) without hvd_shutdown;
//   stop-negotiation  rank 1 stops itself (SIGSTOP) while the others wait in negotiation;
//   stop-transfer     rank 1 stops itself while 64 MiB allreduces run;
//   kill-staged, stop-staged  the same while 4 MiB allreduces run (heap buffers of one host's
//                     ranks: through the stages, where 64 MiB goes through the kernel);
//   kill-lane, stop-lane  the same while 64 KiB allreduces of one name run, each waited for: the
//                     ranks agree on most of them on their board (src/core/lane/lane.h);
//   abort             rank 2 calls hvd_abort;
//   never-submits     rank 1 never submits a tensor the others submit (the job goes on).
// A dead peer must be reported within 10 s with the default settings; a stopped one within
// HVDC_TIMEOUT + 5 s; a tensor one rank never submits within HVDC_STALL_SHUTDOWN_TIME + 5 s.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../mpi/harness.h"

namespace {

using hvdc_test::allreduce_constant;
using hvdc_test::make_tensor;

struct Case {
  const char* name;
  int culprit;
  size_t floats;   // elements of the survivors' float32 allreduces: 64 MiB, 4 MiB or 64 bytes
  double bound_s;  // time to error allowed from T; < 0: from an environment setting (below)
  bool ends_work;  // the engine's work ends (else only the one tensor fails)
  bool one_name = false;  // the allreduces reuse one name (cached: the lane), else one name each
};

constexpr size_t kSmall = 16, kLane = size_t{16} << 10, kStaged = size_t{1} << 20,
                 kTransfer = size_t{16} << 20;

const Case kCases[] = {
    {"kill-negotiation", 1, kSmall, 10, true}, {"kill-transfer", 1, kTransfer, 10, true},
    {"kill-staged", 1, kStaged, 10, true},     {"exit", 1, kSmall, 10, true},
    {"stop-negotiation", 1, kSmall, -1, true}, {"stop-transfer", 1, kTransfer, -1, true},
    {"stop-staged", 1, kStaged, -1, true},     {"abort", 2, kSmall, 5, true},
    {"never-submits", 1, kSmall, -2, false},   {"kill-lane", 1, kLane, 10, true, true},
    {"stop-lane", 1, kLane, -1, true, true},
};

int g_rank = -1;  // hvd_rank() is -1 after hvd_shutdown

int verdict(bool ok, const char* what, int* failures) {
  std::printf("%s fault.%s (rank %d)\n", ok ? "PASS" : "FAIL", what, g_rank);
  std::fflush(stdout);
  if (!ok) ++*failures;
  return ok ? 0 : 1;
}

int env_seconds(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

double bound_of(const Case& c) {
  if (c.bound_s >= 0) return c.bound_s;
  if (c.bound_s == -1) return env_seconds("HVDC_TIMEOUT", 60) + 5.0;
  return env_seconds("HVDC_STALL_SHUTDOWN_TIME", 300) + 5.0;
}

// CLOCK_MONOTONIC is one clock for every process of a host, so ranks on one host can agree on
// a moment with it (the suite runs on one host).
int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double seconds_since(int64_t t_ns) {
  return static_cast<double>(now_ns() - t_ns) / 1e9;
}

void sleep_until(int64_t t_ns) {
  const int64_t wait = t_ns - now_ns();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
}

std::vector<int64_t> all_pids() {
  int64_t mine = getpid();
  hvd_tensor_t t = make_tensor(&mine, HVD_INT64, {1});
  int64_t shape[1] = {1};  // make_tensor's shape points into its (temporary) argument
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

size_t element_count(const Case& c) {
  return c.floats;
}

// The culprit takes part in the allreduces until its fault.
bool during_transfers(const Case& c) {
  return c.floats > kSmall;
}

// Allreduces (those the culprit never joins) until one fails or `limit_s` passes.
hvd_status_t allreduce_until_failure(size_t count, double limit_s, bool one_name = false) {
  std::vector<float> buf;
  const int64_t start = now_ns();
  for (int i = 0; seconds_since(start) < limit_s; ++i) {
    const std::string name = one_name ? "fault.op" : "fault.op." + std::to_string(i);
    hvd_status_t s = allreduce_constant(name, HVD_OP_SUM, count, 1.0f, &buf);
    if (s != HVD_SUCCESS) return s;
  }
  return HVD_SUCCESS;
}

// The error a survivor waits for: the loop of allreduces, or (never-submits) the one tensor.
hvd_status_t wait_for_error(const Case& c) {
  if (c.ends_work) return allreduce_until_failure(element_count(c), bound_of(c) + 10, c.one_name);
  std::vector<float> buf;
  return allreduce_constant("fault.never", HVD_OP_SUM, 16, 1.0f, &buf);
}

// The culprit dies, exits or stops for good: a survivor's hvd_shutdown must not wait for it, and
// returns the job's asynchronous error within this bound (measured here, on a loaded 2-core
// machine too: the fast path waits for no peer).
constexpr double kLostPeerShutdownSeconds = 1.0;

bool peer_lost(const Case& c) {
  return c.ends_work && std::strcmp(c.name, "abort") != 0;
}

bool expected_code(const Case& c, hvd_status_t s) {
  if (std::strcmp(c.name, "abort") == 0) return s == HVD_ERR_ABORTED;
  if (!c.ends_work) return s == HVD_ERR_TIMEOUT;
  return s == HVD_ERR_PEER_FAILURE || s == HVD_ERR_TIMEOUT;
}

bool names_rank(const std::string& message, int rank) {
  for (const char* form : {"rank %d", "rank(s) %d", "ranks: %d", "ranks %d", "[%d]"}) {
    char text[32];
    std::snprintf(text, sizeof(text), form, rank);
    if (message.find(text) != std::string::npos) return true;
  }
  return false;
}

// Returns the asynchronous error this rank reports.
hvd_status_t survivor(const Case& c, int64_t t_ns, const std::vector<int64_t>& pids,
                      int* failures) {
  const hvd_status_t s = wait_for_error(c);
  const double tte = seconds_since(t_ns);
  const std::string message = hvd_last_error_message();
  std::printf("rank %d: %s %.2f s after the fault: %s\n", g_rank, hvd_status_string(s), tte,
              message.c_str());
  std::printf("TTE case=%s np=%d rank=%d seconds=%.3f status=%s\n", c.name, hvd_size(), g_rank, tte,
              hvd_status_string(s));
  verdict(expected_code(c, s) && names_rank(message, c.culprit) && tte < bound_of(c),
          "survivor_gets_typed_error", failures);
  hvd_status_t async = HVD_ERR_INTERNAL;
  const bool got = hvd_get_async_error(&async) == HVD_SUCCESS;
  verdict(got && async == (c.ends_work ? s : HVD_SUCCESS), "async_error", failures);
  if (!c.ends_work) {
    std::vector<float> buf;  // the job goes on: every rank, the culprit too, runs this one
    verdict(allreduce_constant("fault.after", HVD_OP_SUM, 16, 1.0f, &buf) == HVD_SUCCESS &&
                buf[0] == static_cast<float>(hvd_size()),
            "job_goes_on", failures);
  }
  if (std::strncmp(c.name, "stop", 4) == 0 && g_rank == 0) {
    kill(static_cast<pid_t>(pids[c.culprit]), SIGCONT);
  }
  return async;
}

// A stopped rank after it was resumed: the others have given up on it, so its next op fails.
void resumed_culprit(int* failures) {
  const hvd_status_t s = allreduce_until_failure(16, 30);
  std::printf("rank %d resumed: %s: %s\n", g_rank, hvd_status_string(s), hvd_last_error_message());
  verdict(s != HVD_SUCCESS, "resumed_rank_fails", failures);
}

void stopper(const Case& c, int64_t t_ns, int* failures) {
  if (!during_transfers(c)) {
    sleep_until(t_ns);
    kill(getpid(), SIGSTOP);
  } else {
    std::thread stop([t_ns] {
      sleep_until(t_ns);
      kill(getpid(), SIGSTOP);
    });
    allreduce_until_failure(element_count(c), 1.0, c.one_name);  // stopped in these
    stop.join();
  }
  resumed_culprit(failures);
}

// Dies, exits, or stops at T while (for the transfer cases) taking part in the allreduces.
void killer(const Case& c, int64_t t_ns) {
  std::thread doer([&c, t_ns] {
    sleep_until(t_ns);
    if (std::strcmp(c.name, "exit") == 0) std::exit(0);  // no hvd_shutdown
    kill(getpid(), SIGKILL);
  });
  if (during_transfers(c)) allreduce_until_failure(element_count(c), 30, c.one_name);
  doer.join();  // never returns: the process ends at T
}

void aborter(int64_t t_ns, int* failures) {
  sleep_until(t_ns);
  hvd_abort("fault test: abort from rank 2");
  std::vector<float> buf;
  const hvd_status_t s = allreduce_constant("fault.late", HVD_OP_SUM, 16, 1.0f, &buf);
  verdict(s == HVD_ERR_ABORTED, "aborting_rank_fails_fast", failures);
}

// Submits "fault.after" once the others have given up on "fault.never" (HVDC_STALL_SHUTDOWN_TIME
// after T): sooner, it would stall as long as "fault.never" and fail with it.
void never_submitter(int64_t t_ns, int* failures) {
  sleep_until(t_ns + int64_t{1000000000} * env_seconds("HVDC_STALL_SHUTDOWN_TIME", 300));
  std::vector<float> buf;
  verdict(allreduce_constant("fault.after", HVD_OP_SUM, 16, 1.0f, &buf) == HVD_SUCCESS &&
              buf[0] == static_cast<float>(hvd_size()),
          "job_goes_on", failures);
}

void culprit(const Case& c, int64_t t_ns, int* failures) {
  if (std::strncmp(c.name, "stop", 4) == 0) return stopper(c, t_ns, failures);
  if (std::strcmp(c.name, "abort") == 0) return aborter(t_ns, failures);
  if (std::strcmp(c.name, "never-submits") == 0) return never_submitter(t_ns, failures);
  killer(c, t_ns);
}

const Case* find_case(const char* name) {
  for (const Case& c : kCases) {
    if (std::strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

int run(const Case& c) {
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  g_rank = hvd_rank();
  int failures = 0;
  const std::vector<int64_t> pids = all_pids();
  if (static_cast<int>(pids.size()) != hvd_size() || hvd_size() < 3) {
    verdict(false, "setup (needs np >= 3)", &failures);
    return 1;
  }
  // T: 300 ms after the slowest rank got here, so that every survivor waits when it comes.
  const int64_t t_ns = hvdc_test::all_max(now_ns() + 300000000, "fault.t");
  hvd_status_t async = HVD_SUCCESS;
  if (g_rank == c.culprit) {
    culprit(c, t_ns, &failures);
  } else {
    async = survivor(c, t_ns, pids, &failures);
  }
  const int64_t before = now_ns();
  const hvd_status_t down = hvd_shutdown();
  const double down_s = seconds_since(before);
  std::printf("rank %d: hvd_shutdown: %s after %.3f s\n", g_rank, hvd_status_string(down), down_s);
  verdict(down_s < 10.0, "shutdown_returns", &failures);
  if (peer_lost(c) && g_rank != c.culprit) {
    verdict(down_s < kLostPeerShutdownSeconds, "shutdown_fast_after_lost_peer", &failures);
    verdict(down == async, "shutdown_returns_async_error", &failures);
  }
  std::printf("DONE rank %d: %d failed\n", g_rank, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  hvdc_test::pretend_hosts();  // the -hierarchical runs: HVDC_TEST_HOSTS
  const Case* c = argc > 1 ? find_case(argv[1]) : nullptr;
  if (c == nullptr) {
    std::fprintf(stderr, "usage: %s CASE; cases:", argv[0]);
    for (const Case& k : kCases) std::fprintf(stderr, " %s", k.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  return run(*c);
}
