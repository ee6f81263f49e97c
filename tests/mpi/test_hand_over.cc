// Part of mode "lane": ops that a driving caller leaves to the engine thread. While hvd_wait
// drives the passes, the engine thread sleeps standing aside (src/core/caller_drive.cc), and only
// some calls wake it: these cases come right after a loop of waited ops, when it sleeps, and
// each op must still complete, with its result exact, however it is waited for: polled with
// hvd_test, freed without a wait, waited for late, joined at once, polled on one thread while
// another thread drives its own loop, and run on the engine thread alone (a completion
// callback, which ends caller driving for good: last).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {
namespace {

constexpr size_t kFloats = 4 << 10;  // 16 KiB
constexpr int kLoopOps = 200;
// A missed wake-up costs an op at most a few milliseconds; this only turns a hang into a failure.
constexpr auto kPollLimit = std::chrono::seconds(20);

float value_at(int r, size_t i, int step) {
  return static_cast<float>((r + 1) * ((i + 3 * step) % 5));
}

void fill_step(float* data, int step) {
  for (size_t i = 0; i < kFloats; ++i) data[i] = value_at(hvd_rank(), i, step);
}

bool sum_is_right(const float* data, int step, std::string* detail) {
  for (size_t i = 0; i < kFloats; ++i) {
    float want = 0;
    for (int r = 0; r < hvd_size(); ++r) want += value_at(r, i, step);
    if (data[i] != want) {
      *detail = "step " + std::to_string(step) + " element " + std::to_string(i) + ": " +
                std::to_string(data[i]) + ", want " + std::to_string(want);
      return false;
    }
  }
  return true;
}

hvd_status_t submit(float* data, const std::string& name, const hvd_op_args_t* args,
                    hvd_handle_t* h) {
  int64_t shape[1] = {static_cast<int64_t>(kFloats)};
  hvd_tensor_t t = {data, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  return hvd_allreduce_async(&t, data, HVD_OP_SUM, name.c_str(), args, h);
}

// kLoopOps waited ops under `name`, each checked: afterwards the engine thread stands aside.
bool waited_loop(float* data, const std::string& name, std::string* detail) {
  for (int step = 0; step < kLoopOps; ++step) {
    fill_step(data, step);
    hvd_handle_t h = 0;
    hvd_status_t s = submit(data, name, nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    hvd_handle_free(h);
    if (s != HVD_SUCCESS) {
      *detail = name + " step " + std::to_string(step) + ": " + status_text(s);
      return false;
    }
    if (!sum_is_right(data, step, detail)) return false;
  }
  return true;
}

// Polls h with hvd_test until it is done, or fails after kPollLimit.
hvd_status_t poll_until_done(hvd_handle_t h) {
  const auto until = std::chrono::steady_clock::now() + kPollLimit;
  int32_t done = 0;
  hvd_status_t s = HVD_SUCCESS;
  while (s == HVD_SUCCESS && !done) {
    s = hvd_test(h, &done);
    if (!done && std::chrono::steady_clock::now() > until) return HVD_ERR_TIMEOUT;
  }
  return s;
}

// A loop, then one more waited op under `name` and at once, with nothing between its drive's
// end and the submission, an op under `name`.probe on `probe` that `finish` waits for (and
// frees): the engine thread has slept through the loop, and only the way `finish` waits may
// wake it.
template <typename Finish>
void after_loop(Results& results, const std::string& label, float* data, float* probe,
                Finish finish) {
  std::string detail;
  const std::string name = "hand-over." + label;
  bool ok = waited_loop(data, name, &detail);
  if (ok) {
    fill_step(data, kLoopOps);
    fill_step(probe, kLoopOps + 1);
    hvd_handle_t last = 0, h = 0;
    hvd_status_t s = submit(data, name, nullptr, &last);
    if (s == HVD_SUCCESS) s = hvd_wait(last);
    hvd_handle_free(last);
    if (s == HVD_SUCCESS) s = submit(probe, name + ".probe", nullptr, &h);
    if (s == HVD_SUCCESS) s = finish(h);
    ok = s == HVD_SUCCESS && sum_is_right(data, kLoopOps, &detail) &&
         sum_is_right(probe, kLoopOps + 1, &detail);
    if (s != HVD_SUCCESS) detail = status_text(s);
  }
  record(results, name, ok, detail);
}

void test_polled_freed_late(Results& results, float* data, float* probe) {
  after_loop(results, "polled", data, probe, [](hvd_handle_t h) {
    const hvd_status_t s = poll_until_done(h);
    hvd_handle_free(h);
    return s;
  });
  // hvd_handle_free waits for the op's end without driving it.
  after_loop(results, "freed", data, probe, [](hvd_handle_t h) { return hvd_handle_free(h); });
  // Submitted right after the loop, then waited for only after the engine thread's spin.
  after_loop(results, "late-wait", data, probe, [](hvd_handle_t h) {
    usleep(2000);
    const hvd_status_t s = hvd_wait(h);
    hvd_handle_free(h);
    return s;
  });
}

// hvd_join at once after a waited op: a blocking call that waits without driving.
void test_join_after_loop(Results& results, float* data) {
  std::string detail;
  bool ok = waited_loop(data, "hand-over.join-loop", &detail);
  if (ok) {
    fill_step(data, kLoopOps);
    hvd_handle_t h = 0;
    hvd_status_t s = submit(data, "hand-over.join-loop", nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    hvd_handle_free(h);
    int32_t last = -2;
    if (s == HVD_SUCCESS) s = hvd_join(&last);
    ok =
        s == HVD_SUCCESS && last >= 0 && last < hvd_size() && sum_is_right(data, kLoopOps, &detail);
    if (s != HVD_SUCCESS) detail = status_text(s) + ", last joined rank " + std::to_string(last);
  }
  record(results, "hand-over.join", ok, detail);
}

// One thread drives a loop of its own while another submits and polls: each op completes.
void test_poller_beside_driver(Results& results) {
  std::vector<float> driven(kFloats), polled(kFloats);
  std::string driven_detail, polled_detail;
  bool driven_ok = false;
  std::thread driver(
      [&] { driven_ok = waited_loop(driven.data(), "hand-over.beside", &driven_detail); });
  bool polled_ok = true;
  for (int step = 0; step < 50 && polled_ok; ++step) {
    fill_step(polled.data(), step);
    hvd_handle_t h = 0;
    hvd_status_t s = submit(polled.data(), "hand-over.poller", nullptr, &h);
    if (s == HVD_SUCCESS) s = poll_until_done(h);
    hvd_handle_free(h);
    polled_ok = s == HVD_SUCCESS && sum_is_right(polled.data(), step, &polled_detail);
    if (s != HVD_SUCCESS) polled_detail = "step " + std::to_string(step) + ": " + status_text(s);
  }
  driver.join();
  record(results, "hand-over.beside-driver", driven_ok, driven_detail);
  record(results, "hand-over.poller", polled_ok, polled_detail);
}

void count_done(void* user_data, hvd_handle_t, hvd_status_t status) {
  if (status == HVD_SUCCESS) static_cast<std::atomic<int>*>(user_data)->fetch_add(1);
}

// An op with a completion callback runs on the engine thread alone (no caller drives again).
void test_callback_after_loop(Results& results, float* data) {
  std::string detail;
  bool ok = waited_loop(data, "hand-over.callback", &detail);
  if (ok) {
    std::atomic<int> done{0};
    hvd_op_args_t args;
    hvd_op_args_init(&args, sizeof args);
    args.on_done = count_done;
    args.on_done_user_data = &done;
    fill_step(data, kLoopOps);
    hvd_handle_t h = 0;
    hvd_status_t s = submit(data, "hand-over.callback", &args, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    hvd_handle_free(h);
    ok = s == HVD_SUCCESS && done.load() == 1 && sum_is_right(data, kLoopOps, &detail);
    if (s != HVD_SUCCESS || done.load() != 1) {
      detail = status_text(s) + ", callbacks " + std::to_string(done.load());
    }
  }
  // And a loop after it, waited for without drivers.
  if (ok) ok = waited_loop(data, "hand-over.callback", &detail);
  record(results, "hand-over.callback", ok, detail);
}

}  // namespace

void test_hand_over(Results& results) {
  void* shared = nullptr;
  if (hvd_mem_alloc(kFloats * sizeof(float), &shared) != HVD_SUCCESS) {
    record(results, "hand-over.mem-alloc", false, hvd_last_error_message());
    return;
  }
  float* data = static_cast<float*>(shared);
  std::vector<float> probe(kFloats);
  test_polled_freed_late(results, data, probe.data());
  test_join_after_loop(results, data);
  test_poller_beside_driver(results);
  test_callback_after_loop(results, data);
  hvd_mem_free(shared);
}

}  // namespace hvdc_test
