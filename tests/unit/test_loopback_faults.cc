// Faults injected through the loopback fabric into engines that run as threads: a peer whose
// connections fail, a peer that goes silent (its messages dropped: a stopped process), and a
// slow peer. Every survivor must get a typed error in bounded time, never hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::EngineConfig;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc_test::on_ranks;
using hvdc_test::ThreadEngines;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 4;
constexpr int kCulprit = 2;  // neither the coordinator nor the last rank

std::unique_ptr<ThreadEngines> start(int timeout_seconds) {
  EngineConfig config;
  config.hostname = "loopback-faults";
  config.timeout_seconds = timeout_seconds;
  config.stall_check_seconds = 0;
  std::unique_ptr<ThreadEngines> job;
  Status st = ThreadEngines::start(kRanks, config, &job);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return job;
}

// One float allreduce of `count` elements named `name` on rank r.
Status allreduce(ThreadEngines& job, int r, const std::string& name, size_t count,
                 std::chrono::milliseconds limit) {
  std::vector<float> in(count, static_cast<float>(r + 1)), out(count);
  Request req =
      hvdc_test::make_request(name, OpType::kAllreduce, HVD_FLOAT32, {static_cast<int64_t>(count)});
  req.reduce_op = HVD_OP_SUM;
  std::shared_ptr<OpState> state;
  HVDC_RETURN_IF_ERROR(
      hvdc_test::submit(job.engine(r), hvdc_test::make_entry(req, in.data(), out.data()), &state));
  Status st = hvdc_test::await(state, limit);
  if (st.is_ok() && out[0] != static_cast<float>(kRanks * (kRanks + 1) / 2)) {
    return Status(HVD_ERR_INTERNAL, "wrong sum " + std::to_string(out[0]));
  }
  return st;
}

// Every survivor's op failed with one of the codes, and its message names the culprit.
void expect_survivors_failed(const std::vector<Status>& status, std::vector<hvd_status_t> codes,
                             const std::string& culprit_text) {
  for (int r = 0; r < kRanks; ++r) {
    if (r == kCulprit) continue;
    EXPECT_NE(std::find(codes.begin(), codes.end(), status[r].code()), codes.end())
        << "rank " << r << ": " << status[r].code() << " " << status[r].message();
    EXPECT_NE(status[r].message().find(culprit_text), std::string::npos)
        << "rank " << r << ": " << status[r].message();
  }
}

// Shutdown after a fault returns on every rank (the culprit's thread takes part too).
void shut_down_in_bounded_time(ThreadEngines& job) {
  const auto begin = Clock::now();
  job.shutdown();
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(12));
}

TEST(LoopbackFaults, FailedPeerFailsEverySurvivorsPendingOp) {
  std::unique_ptr<ThreadEngines> job = start(60);
  ASSERT_NE(job, nullptr);
  std::vector<Status> warm(kRanks), status(kRanks);
  on_ranks(kRanks,
           [&](int r) { warm[r] = allreduce(*job, r, "warm", 64, std::chrono::seconds(20)); });
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(warm[r].is_ok()) << warm[r].message();
  const auto begin = Clock::now();
  on_ranks(kRanks, [&](int r) {
    if (r == kCulprit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others wait for it
      job->fabric().fail(kCulprit);
      return;
    }
    status[r] = allreduce(*job, r, "pending", 64, std::chrono::seconds(20));
  });
  // No progress timeout is involved: the failed connection ends the work at once.
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(3));
  expect_survivors_failed(status, {HVD_ERR_PEER_FAILURE}, "rank " + std::to_string(kCulprit));
  for (int r = 0; r < kRanks; ++r) {
    if (r == kCulprit) continue;
    EXPECT_EQ(job->engine(r).async_error().code(), HVD_ERR_PEER_FAILURE) << "rank " << r;
  }
  shut_down_in_bounded_time(*job);
}

// The culprit goes silent before a round: the survivors' liveness probe finds it.
TEST(LoopbackFaults, SilentPeerTimesOutInNegotiation) {
  std::unique_ptr<ThreadEngines> job = start(1);
  ASSERT_NE(job, nullptr);
  std::vector<Status> status(kRanks);
  job->fabric().drop_from(kCulprit);
  const auto begin = Clock::now();
  on_ranks(kRanks, [&](int r) {
    if (r != kCulprit) status[r] = allreduce(*job, r, "unanswered", 64, std::chrono::seconds(20));
  });
  // HVDC_TIMEOUT 1 s: a probe round after 0.5-1.5 s that times out after another 1.5 s.
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(8));
  expect_survivors_failed(status, {HVD_ERR_TIMEOUT}, "rank(s) " + std::to_string(kCulprit));
  shut_down_in_bounded_time(*job);
}

// The culprit goes silent as it starts the transfer of a collective whose negotiation it
// answered: the survivors' transfers time out, and stall agreement names it, not the live
// neighbours that wait for it too.
TEST(LoopbackFaults, SilentPeerTimesOutInTransfer) {
  std::unique_ptr<ThreadEngines> job = start(1);
  ASSERT_NE(job, nullptr);
  constexpr size_t kCount = 1 << 18;  // 1 MiB: the ring, in several segments
  job->fabric().drop_from(kCulprit, hvdc::transport::TagKind::kData);
  std::vector<Status> status(kRanks);
  const auto begin = Clock::now();
  on_ranks(kRanks,
           [&](int r) { status[r] = allreduce(*job, r, "big", kCount, std::chrono::seconds(20)); });
  // HVDC_TIMEOUT 1 s, then a stall grace of 0.25 s.
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(6));
  expect_survivors_failed(status, {HVD_ERR_TIMEOUT}, "rank " + std::to_string(kCulprit));
  for (int r = 0; r < kRanks; ++r) {
    if (r == kCulprit) continue;
    EXPECT_NE(status[r].message().find("stopped"), std::string::npos) << status[r].message();
  }
  shut_down_in_bounded_time(*job);
}

// A slow peer is not a faulty one: delayed messages still give the right result.
TEST(LoopbackFaults, DelayedPeerStillCompletes) {
  std::unique_ptr<ThreadEngines> job = start(5);
  ASSERT_NE(job, nullptr);
  job->fabric().delay_from(1, std::chrono::milliseconds(30));
  std::vector<Status> status(kRanks);
  on_ranks(kRanks, [&](int r) {
    for (int k = 0; k < 3 && status[r].is_ok(); ++k) {
      status[r] = allreduce(*job, r, "slow." + std::to_string(k), 100000, std::chrono::seconds(20));
    }
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(status[r].is_ok()) << status[r].message();
  std::vector<Status> down = job->shutdown();
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(down[r].is_ok()) << down[r].message();
}

}  // namespace
