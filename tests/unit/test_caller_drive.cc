// Caller driving (core/caller_drive.cc): a waiter runs the engine's passes on its own thread, and
// ops that run the user's code still complete on the engine thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::EngineConfig;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::TensorEntry;
using hvdc_test::on_ranks;
using hvdc_test::ThreadEngines;

constexpr int kRanks = 2;
constexpr size_t kCount = 1024;

std::unique_ptr<ThreadEngines> start_job() {
  EngineConfig config;
  config.hostname = "unit-test-host";
  // Long enough that a driver never gives up on a live peer: a driven op completes in drive().
  config.spin_micros = 2000000;
  std::unique_ptr<ThreadEngines> job;
  Status st = ThreadEngines::start(kRanks, config, &job);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return job;
}

TensorEntry allreduce_entry(const std::vector<float>& in, std::vector<float>& out) {
  hvdc::core::Request request = hvdc_test::make_request(
      "drive.sum", OpType::kAllreduce, HVD_FLOAT32, {static_cast<int64_t>(in.size())});
  request.reduce_op = HVD_OP_SUM;
  return hvdc_test::make_entry(std::move(request), in.data(), out.data());
}

// Records the thread a completion callback ran on.
struct CallbackThread {
  std::atomic<bool> called{false};
  std::thread::id id;
};

void record_thread(void* user_data, hvd_handle_t, hvd_status_t) {
  auto* seen = static_cast<CallbackThread*>(user_data);
  seen->id = std::this_thread::get_id();
  seen->called.store(true);
}

TEST(CallerDrive, WaitersCompleteTheirOpsOnTheirOwnThread) {
  std::unique_ptr<ThreadEngines> job = start_job();
  ASSERT_NE(job, nullptr);
  std::vector<Status> failed(kRanks);
  std::vector<int> not_driven(kRanks, 0);
  on_ranks(kRanks, [&](int r) {
    std::vector<float> in(kCount, static_cast<float>(r + 1)), out(kCount, 0.0f);
    // The same name each time: after the first op, every op is a response-cache hit.
    for (int i = 0; i < 200 && failed[r].is_ok(); ++i) {
      std::shared_ptr<OpState> op;
      failed[r] = hvdc_test::submit(job->engine(r), allreduce_entry(in, out), &op);
      if (!failed[r].is_ok()) break;
      if (!job->engine(r).drive(*op) || !op->done()) ++not_driven[r];
      failed[r] = hvdc_test::await(op);
      for (size_t k = 0; k < kCount && failed[r].is_ok(); ++k) {
        if (out[k] != 3.0f) failed[r] = Status(HVD_ERR_INTERNAL, "wrong sum");
      }
    }
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(failed[r].is_ok()) << "rank " << r << ": " << failed[r].message();
    EXPECT_EQ(not_driven[r], 0) << "rank " << r << ": drive() returned before its op was done";
  }
  for (const Status& st : job->shutdown()) EXPECT_TRUE(st.is_ok()) << st.message();
}

TEST(CallerDrive, CallbacksStillRunOnTheEngineThread) {
  std::unique_ptr<ThreadEngines> job = start_job();
  ASSERT_NE(job, nullptr);
  std::vector<CallbackThread> seen(kRanks);
  std::vector<std::thread::id> waiter(kRanks);
  std::vector<Status> failed(kRanks);
  std::vector<int> drove(kRanks, 1);  // not vector<bool>: each thread writes its own element
  on_ranks(kRanks, [&](int r) {
    waiter[r] = std::this_thread::get_id();
    std::vector<float> in(kCount, 1.0f), out(kCount, 0.0f);
    TensorEntry entry = allreduce_entry(in, out);
    entry.state = std::make_shared<OpState>(record_thread, &seen[r]);
    std::shared_ptr<OpState> op;
    failed[r] = hvdc_test::submit(job->engine(r), std::move(entry), &op);
    if (!failed[r].is_ok()) return;
    drove[r] = job->engine(r).drive(*op);
    failed[r] = hvdc_test::await(op);
    // Once such an op was submitted, no caller drives this engine again.
    std::shared_ptr<OpState> plain;
    if (failed[r].is_ok())
      failed[r] = hvdc_test::submit(job->engine(r), allreduce_entry(in, out), &plain);
    if (failed[r].is_ok()) drove[r] = drove[r] || job->engine(r).drive(*plain);
    if (failed[r].is_ok()) failed[r] = hvdc_test::await(plain);
  });
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(failed[r].is_ok()) << "rank " << r << ": " << failed[r].message();
    EXPECT_FALSE(drove[r]) << "rank " << r;
    ASSERT_TRUE(seen[r].called.load()) << "rank " << r;
    EXPECT_NE(seen[r].id, waiter[r]) << "rank " << r << ": the callback ran on the waiter";
  }
  for (const Status& st : job->shutdown()) EXPECT_TRUE(st.is_ok()) << st.message();
}

}  // namespace
