// The stall inspector, run with HVDC_STALL_CHECK_TIME=1 and HVDC_STALL_SHUTDOWN_TIME=3 at np >= 2:
// the last rank skips tensor "x" (never negotiated before) and then "y" (cached by an earlier
// step). Rank 0 logs "Missing ranks:" naming the last rank and the tensor; the tensor fails with
// HVD_ERR_TIMEOUT on every rank that submitted it; the next op works everywhere.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

std::mutex log_mutex;
std::string log_text;

void capture(void*, int32_t, const char* message) {
  std::lock_guard<std::mutex> lock(log_mutex);
  log_text += message;
  log_text += "\n";
  std::fprintf(stderr, "%s\n", message);
}

hvd_status_t allreduce_ones(const char* name, std::vector<float>* out) {
  return allreduce_constant(name, HVD_OP_SUM, 16, 1.0f, out);
}

// The last rank skips `name`; the others must see HVD_ERR_TIMEOUT within a few seconds.
void skip_and_expect_timeout(Results& results, const char* name) {
  const bool skipper = hvd_rank() == hvd_size() - 1;
  std::vector<float> buf;
  std::string detail;
  bool ok = true;
  if (skipper) {
    // Out of the others' way until their op has failed: a collective submitted now would itself
    // wait for them past the shutdown time.
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  } else {
    const auto start = std::chrono::steady_clock::now();
    const hvd_status_t s = allreduce_ones(name, &buf);
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ok = s == HVD_ERR_TIMEOUT && waited >= 2.5 && waited < 30;
    detail = status_text(s) + " after " + std::to_string(waited) + " s";
  }
  record(results, std::string("stall.") + name + "_fails_with_timeout", ok, detail);
  bool listed = true;
  if (hvd_rank() == 0) {
    std::lock_guard<std::mutex> lock(log_mutex);
    const std::string line = std::to_string(hvd_size() - 1) + ": [" + name;
    listed = log_text.find("Missing ranks:") != std::string::npos &&
             log_text.find(line) != std::string::npos;
    detail = "rank 0's log lacks \"Missing ranks:\" or \"" + line + "\"";
  }
  record(results, std::string("stall.") + name + "_missing_rank_logged", listed, detail);
  const hvd_status_t s = allreduce_ones((std::string("after.") + name).c_str(), &buf);
  ok = s == HVD_SUCCESS && buf[0] == static_cast<float>(hvd_size());
  record(results, std::string("stall.next_op_after_") + name, ok, status_text(s));
}

bool log_has(const std::string& needle) {
  std::lock_guard<std::mutex> lock(log_mutex);
  return log_text.find(needle) != std::string::npos;
}

// While the last rank skips "z": every other rank's log gets a hang report by itself once "z"
// waited past the check time (1 s), SIGUSR1 adds one, and hvd_dump_pending returns one that
// names "z", its phase and (on rank 0, the coordinator) the missing rank.
void hang_reports(Results& results) {
  const int last = hvd_size() - 1;
  const bool skipper = hvd_rank() == last;
  std::string dump, detail;
  bool ok = true;
  if (skipper) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  } else {
    float data[16] = {0};
    int64_t shape[1] = {16};
    hvd_tensor_t t = make_tensor(data, HVD_FLOAT32, {16});
    t.shape = shape;
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_allreduce_async(&t, data, HVD_OP_SUM, "z", nullptr, &h);
    std::this_thread::sleep_for(std::chrono::milliseconds(1600));
    raise(SIGUSR1);
    char text[8192];
    size_t length = 0;
    const hvd_status_t d = hvd_dump_pending(text, sizeof(text), &length);
    dump = d == HVD_SUCCESS ? text : status_text(d);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ok = s == HVD_SUCCESS && d == HVD_SUCCESS && length == dump.size() &&
         dump.find("'z' ALLREDUCE, process set 0, float32 [16]") != std::string::npos &&
         dump.find("negotiating") != std::string::npos && log_has("hang report, requested") &&
         log_has("hang report, an op has waited more than 1 s");
    if (ok && hvd_rank() == 0) {
      ok = dump.find("as coordinator of process set 0") != std::string::npos &&
           dump.find("'z' (ALLREDUCE): waiting for ranks " + std::to_string(last)) !=
               std::string::npos;
    }
    const hvd_status_t w = hvd_wait(h);
    ok = ok && w == HVD_ERR_TIMEOUT;
    hvd_handle_free(h);
    detail = "dump: " + dump + " wait: " + status_text(w);
  }
  record(results, "stall.hang_reports", ok, detail);
}

}  // namespace

int run_stall_suite() {
  hvd_set_log_callback(capture, nullptr);
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  Results results;
  std::vector<float> buf;
  for (int step = 0; step < 2; ++step) {  // "y" is negotiated, then served by the cache
    const hvd_status_t s = allreduce_ones("y", &buf);
    record(results, "stall.y_warm_step" + std::to_string(step), s == HVD_SUCCESS, status_text(s));
  }
  skip_and_expect_timeout(results, "x");
  skip_and_expect_timeout(results, "y");
  hang_reports(results);
  const int rc = finish(results, "stall");
  hvd_set_log_callback(nullptr, nullptr);
  return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
}

}  // namespace hvdc_test
