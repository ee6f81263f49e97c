// CUDA tensors through whole engines (threads as ranks, loopback transport) whose device backend
// runs on the host-memory runtime: results, and the fault guarantees (bounded time to an error
// on every rank) for device ops: an NCCL error, an asynchronous one, a peer that dies mid-op.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "host_runtime.h"
#include "ops/nccl/submission.h"
#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc_test::HostRuntime;
using hvdc_test::HostWorld;
using hvdc_test::ThreadEngines;
namespace device = hvdc::device;
using Clock = std::chrono::steady_clock;

constexpr size_t kCount = 1000;

class DeviceEngines {
 public:
  explicit DeviceEngines(int n) : world_(std::make_shared<HostWorld>()) {
    for (int r = 0; r < n; ++r) runtimes_.push_back(std::make_unique<HostRuntime>(world_, r));
    hvdc::core::EngineConfig config;
    config.timeout_seconds = 20;
    Status st = ThreadEngines::start(n, config, &job_, [this](int r, hvdc::core::EngineConfig* c) {
      c->device_runtime = hvdc_test::provide(runtimes_[r].get());
    });
    EXPECT_TRUE(st.is_ok()) << st.message();
  }
  ~DeviceEngines() {
    if (job_) job_->shutdown();
    job_.reset();
    for (auto& rt : runtimes_) hvdc::ops::nccl::WordPool::forget(rt.get());
  }
  ThreadEngines& job() { return *job_; }
  HostWorld& world() { return *world_; }
  HostRuntime& rt(int r) { return *runtimes_[r]; }

  // Submits a float32 allreduce of `data` (device memory of rank r) in place.
  std::shared_ptr<OpState> allreduce(int r, const std::string& name, float* data,
                                     int32_t op = HVD_OP_SUM) {
    auto request = hvdc_test::make_request(name, OpType::kAllreduce, HVD_FLOAT32,
                                           {static_cast<int64_t>(kCount)});
    request.device_type = HVD_DEVICE_CUDA;
    request.reduce_op = op;
    std::shared_ptr<OpState> state;
    EXPECT_TRUE(
        hvdc_test::submit(job_->engine(r), hvdc_test::make_entry(request, data, data), &state)
            .is_ok());
    return state;
  }
  // Any thread; freed with the runtime.
  float* device_floats(int r, float v) {
    void* p = nullptr;
    EXPECT_TRUE(runtimes_[r]->device_alloc(0, kCount * sizeof(float), &p).is_ok());
    auto* f = static_cast<float*>(p);
    for (size_t i = 0; i < kCount; ++i) f[i] = v + static_cast<float>(i % 7);
    return f;
  }

 private:
  std::shared_ptr<HostWorld> world_;
  std::vector<std::unique_ptr<HostRuntime>> runtimes_;
  std::unique_ptr<ThreadEngines> job_;
};

TEST(DeviceEngines, FusedAverageAcrossThreeEngines) {
  DeviceEngines d(3);
  std::vector<std::vector<float*>> data(3);
  std::vector<std::vector<std::shared_ptr<OpState>>> states(3);
  for (int round = 0; round < 2; ++round) {
    hvdc_test::on_ranks(3, [&](int r) {
      for (int t = 0; t < 4; ++t) {
        data[r].push_back(d.device_floats(r, static_cast<float>(3 * r + t)));
        states[r].push_back(d.allreduce(r, "g" + std::to_string(round) + "." + std::to_string(t),
                                        data[r].back(), HVD_OP_AVERAGE));
      }
      for (auto& s : states[r]) EXPECT_TRUE(hvdc_test::await(s).is_ok());
    });
  }
  for (int r = 0; r < 3; ++r) {
    for (size_t t = 0; t < data[r].size(); ++t) {
      // mean over ranks q of (3q + t % 4 + i % 7) = 3 + t % 4 + i % 7
      EXPECT_FLOAT_EQ(data[r][t][10], 3.0f + static_cast<float>(t % 4) + 3.0f) << r << " " << t;
    }
  }
  EXPECT_EQ(d.world().calls("comm_init_rank"), 3);  // one communicator, made once
  EXPECT_EQ(d.world().calls("unique_id"), 1);
}

// An NCCL call fails on rank 1: every rank's op fails with HVD_ERR_DEVICE, in bounded time, and
// the engines still shut down.
TEST(DeviceEngines, NcclErrorOnOneRankFailsEveryRank) {
  for (auto mode : {HostWorld::FaultMode::kReturn, HostWorld::FaultMode::kAsync}) {
    DeviceEngines d(3);
    d.world().inject(1, "allreduce", mode);
    std::vector<Status> status(3);
    const auto start = Clock::now();
    hvdc_test::on_ranks(3, [&](int r) {
      status[r] = hvdc_test::await(d.allreduce(r, "x", d.device_floats(r, 1.0f)));
    });
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(status[r].code(), device::kErrDevice)
          << "rank " << r << ": " << status[r].message();
      EXPECT_NE(status[r].message().find("injected"), std::string::npos) << status[r].message();
    }
    EXPECT_GE(d.world().calls("comm_abort"), 3);  // no rank is left waiting in NCCL
  }
}

// Rank 2 dies while ranks 0 and 1 wait in NCCL for its data: they fail with
// HVD_ERR_PEER_FAILURE (not a device error), and their communicators are aborted.
TEST(DeviceEngines, PeerDeathDuringADeviceOpKeepsThePeerStatus) {
  std::atomic<bool> release{false};  // outlives the engines: rank 2's stream reads it
  DeviceEngines d(3);
  // Rank 2's op waits for its caller's stream, which is held: it never sends its data.
  d.rt(2).enqueue(device::Stream{}, [&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::vector<std::shared_ptr<OpState>> states(3);
  for (int r = 0; r < 3; ++r) states[r] = d.allreduce(r, "y", d.device_floats(r, 1.0f));
  while (d.world().calls("allreduce") < 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  d.job().fabric().fail(2);
  const auto failed = Clock::now();
  for (int r = 0; r < 2; ++r) {
    Status st = hvdc_test::await(states[r]);
    EXPECT_EQ(st.code(), HVD_ERR_PEER_FAILURE) << "rank " << r << ": " << st.message();
  }
  EXPECT_LT(Clock::now() - failed, std::chrono::seconds(10));
  EXPECT_GE(d.world().calls("comm_abort"), 2);
  release = true;
  EXPECT_NE(hvdc_test::await(states[2]).code(), HVD_SUCCESS);
}

// HVD_OP_STREAM_ORDERED through whole engines: the entry carries the caller's stream and the
// record made at submission; work the caller queues afterwards sees the result.
TEST(DeviceEngines, StreamOrderedThroughTheEngine) {
  DeviceEngines d(2);
  std::vector<std::atomic<float>> seen(2);
  hvdc_test::on_ranks(2, [&](int r) {
    seen[r] = -1.0f;
    device::Stream caller;
    ASSERT_TRUE(d.rt(r).stream_create(0, &caller).is_ok());
    float* data = d.device_floats(r, static_cast<float>(r));
    auto request = hvdc_test::make_request("ordered", OpType::kAllreduce, HVD_FLOAT32,
                                           {static_cast<int64_t>(kCount)});
    request.device_type = HVD_DEVICE_CUDA;
    request.reduce_op = HVD_OP_SUM;
    auto entry = hvdc_test::make_entry(request, data, data);
    entry.cuda_stream = caller.handle;
    entry.stream_ordered = true;
    ASSERT_TRUE(
        hvdc::ops::nccl::record_submission(&d.rt(r), 0, caller.handle, true, &entry.submission)
            .is_ok());
    std::shared_ptr<OpState> state;
    ASSERT_TRUE(hvdc_test::submit(d.job().engine(r), std::move(entry), &state).is_ok());
    d.rt(r).enqueue(caller, [&seen, data, r] { seen[r] = data[0]; });  // no host wait first
    EXPECT_TRUE(hvdc_test::await(state).is_ok());
    d.rt(r).drain(caller);
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(seen[r].load(), 1.0f) << "rank " << r;  // 0 + 1
}

}  // namespace
