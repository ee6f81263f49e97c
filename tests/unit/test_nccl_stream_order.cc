// The device backend's state machines over the host-memory runtime: stream ordering against the
// caller's stream, the communicator cache, and aborts (an injected NCCL error, a peer failure,
// work that never finishes).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "device_ranks.h"
#include "ops/nccl/submission.h"
#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::ops::Collective;
using hvdc::ops::CollectiveArgs;
using hvdc::ops::TensorArgs;
using hvdc_test::DeviceRanks;
using hvdc_test::HostWorld;
using hvdc_test::on_ranks;
namespace device = hvdc::device;
using Clock = std::chrono::steady_clock;

constexpr size_t kCount = 64;

// A float32 SUM allreduce of rank r's buffer `data` in place, in set `context`.
CollectiveArgs sum_op(DeviceRanks& d, int r, float* data, uint32_t context = 1,
                      std::vector<int> members = {}) {
  CollectiveArgs op = d.args(r, Collective::kAllreduce, HVD_FLOAT32);
  op.reduce_op = HVD_OP_SUM;
  op.group = d.group(r, context, members);
  TensorArgs t;
  t.name = "x";
  t.count = kCount;
  t.shape = {static_cast<int64_t>(kCount)};
  t.input = data;
  t.output = data;
  op.tensors.push_back(t);
  return op;
}

float* device_floats(DeviceRanks& d, int r, float v) {
  std::vector<float> host(kCount, v);
  return static_cast<float*>(d.device_copy(r, host.data(), kCount * sizeof(float)));
}

// The caller wrote its input on its stream after a delay, before submitting: hvdc reads it only
// after that write (the event recorded at submission), not the stale value.
TEST(DeviceStreamOrder, ReadsAfterTheCallersEarlierWork) {
  DeviceRanks d(2);
  std::vector<Status> status(2);
  std::vector<float*> data(2);
  on_ranks(2, [&](int r) {
    data[r] = device_floats(d, r, -100.0f);
    device::Stream caller;
    ASSERT_TRUE(d.rt(r).stream_create(0, &caller).is_ok());
    float* buf = data[r];
    d.rt(r).enqueue(caller, [buf, r] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>(r + 1);
    });
    CollectiveArgs op = sum_op(d, r, buf);
    op.tensors[0].stream = caller.handle;
    ASSERT_TRUE(hvdc::ops::nccl::record_submission(&d.rt(r), 0, caller.handle, false,
                                                   &op.tensors[0].submission)
                    .is_ok());
    status[r] = d.run(r, op);
    d.rt(r).drain(caller);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(status[r].is_ok()) << status[r].message();
    EXPECT_EQ(data[r][0], 3.0f);
    EXPECT_EQ(data[r][kCount - 1], 3.0f);
  }
}

// Without a submission record the backend captures the caller's stream when it starts.
TEST(DeviceStreamOrder, WithoutASubmissionRecordCapturesTheStreamAtStart) {
  DeviceRanks d(2);
  std::vector<Status> status(2);
  std::vector<float*> data(2);
  on_ranks(2, [&](int r) {
    data[r] = device_floats(d, r, -100.0f);
    float* buf = data[r];
    d.rt(r).enqueue(device::Stream{}, [buf, r] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>(r + 1);
    });
    status[r] = d.run(r, sum_op(d, r, buf));
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(status[r].is_ok()) << status[r].message();
    EXPECT_EQ(data[r][5], 3.0f);
  }
}

// HVD_OP_STREAM_ORDERED: work the caller queues after submitting runs only once the result is
// in place, without any host wait by the caller.
TEST(DeviceStreamOrder, StreamOrderedResultIsSeenByLaterCallerWork) {
  DeviceRanks d(3);
  std::vector<Status> status(3);
  std::vector<std::atomic<float>> seen(3);
  for (auto& v : seen) v = -1.0f;
  on_ranks(3, [&](int r) {
    float* buf = device_floats(d, r, static_cast<float>(r + 1));
    device::Stream caller;
    ASSERT_TRUE(d.rt(r).stream_create(0, &caller).is_ok());
    CollectiveArgs op = sum_op(d, r, buf);
    op.tensors[0].stream = caller.handle;
    op.tensors[0].stream_ordered = true;
    ASSERT_TRUE(hvdc::ops::nccl::record_submission(&d.rt(r), 0, caller.handle, true,
                                                   &op.tensors[0].submission)
                    .is_ok());
    // Read without waiting on the host: a read that ran before the result would see r + 1.
    d.rt(r).enqueue(caller, [&, buf, r] { seen[r] = buf[0]; });
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // others wait in NCCL
    status[r] = d.run(r, op);
    // The backend's stream released the read (the submission still holds the word: no host
    // store happened yet).
    const auto limit = Clock::now() + std::chrono::seconds(5);
    while (seen[r] == -1.0f && Clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_NE(seen[r], -1.0f) << "rank " << r << ": the caller's stream was not released";
    op.tensors[0].submission.reset();  // as the engine drops the finished op
    d.rt(r).drain(caller);
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(status[r].is_ok()) << status[r].message();
    EXPECT_EQ(seen[r].load(), 6.0f) << "rank " << r;
  }
}

// An op that ends without its stream work (it failed, or was never run) still releases the
// caller's stream: the word is stored from the host.
TEST(DeviceStreamOrder, AnOpThatNeverRanReleasesTheCallersStream) {
  DeviceRanks d(1);
  device::Stream caller;
  ASSERT_TRUE(d.rt(0).stream_create(0, &caller).is_ok());
  std::shared_ptr<hvdc::ops::DeviceSubmission> sub;
  ASSERT_TRUE(hvdc::ops::nccl::record_submission(&d.rt(0), 0, caller.handle, true, &sub).is_ok());
  std::atomic<bool> later{false};
  d.rt(0).enqueue(caller, [&] { later = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(later.load());  // held by the wait on the word
  sub.reset();
  d.rt(0).drain(caller);
  EXPECT_TRUE(later.load());
}

// Without a submission record, a stream-ordered op cannot be ordered safely: it fails at once,
// as a device failure on the NCCL path (peers would wait in NCCL for this rank otherwise).
TEST(DeviceStreamOrder, StreamOrderedWithoutSubmissionRecordFails) {
  DeviceRanks d(1);
  float* buf = device_floats(d, 0, 1.0f);
  CollectiveArgs op = sum_op(d, 0, buf);
  op.tensors[0].stream_ordered = true;
  Status st = d.run(0, op);
  EXPECT_EQ(st.code(), device::kErrDevice);
  EXPECT_NE(st.message().find("record_submission"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("internal error"), std::string::npos) << st.message();
}

// One communicator per (set, device), created by the set's first device op with one unique id
// from the first member, reused by later ops; another set gets its own.
TEST(DeviceCommCache, OnePerSetAndDeviceCreatedLazily) {
  DeviceRanks d(4);
  EXPECT_EQ(d.world().calls("comm_init_rank"), 0);
  for (int round = 0; round < 3; ++round) {
    on_ranks(4, [&](int r) {
      float* buf = device_floats(d, r, 1.0f);
      ASSERT_TRUE(d.run(r, sum_op(d, r, buf)).is_ok());
      EXPECT_EQ(buf[0], 4.0f);
    });
  }
  EXPECT_EQ(d.world().calls("unique_id"), 1);
  EXPECT_EQ(d.world().calls("comm_init_rank"), 4);
  // Set {1, 3} (context 2), twice.
  for (int round = 0; round < 2; ++round) {
    on_ranks(4, [&](int r) {
      if (r % 2 == 0) return;
      float* buf = device_floats(d, r, 2.0f);
      ASSERT_TRUE(d.run(r, sum_op(d, r, buf, 2, {1, 3})).is_ok());
      EXPECT_EQ(buf[0], 4.0f);
    });
  }
  EXPECT_EQ(d.world().calls("unique_id"), 2);
  EXPECT_EQ(d.world().calls("comm_init_rank"), 6);
}

// Ranks sharing one GPU: NCCL would refuse them, so the set runs on the host path (no
// communicator at all) and still gives the right result.
TEST(DeviceCommCache, RanksSharingAGpuTakeTheHostPath) {
  DeviceRanks d(3);
  for (int r = 0; r < 3; ++r) d.world().set_gpu(r, 0, 7);
  on_ranks(3, [&](int r) {
    float* buf = device_floats(d, r, static_cast<float>(r));
    ASSERT_TRUE(d.run(r, sum_op(d, r, buf)).is_ok());
    EXPECT_EQ(buf[kCount - 1], 3.0f);
  });
  EXPECT_EQ(d.world().calls("comm_init_rank"), 0);
  EXPECT_EQ(d.world().calls("allreduce"), 0);
}

// A SUM over `buf` on rank 0 whose caller's stream is held until *release (the stream is
// created here; its held work ends with the test).
CollectiveArgs held_sum_op(DeviceRanks& d, float* buf, std::atomic<bool>* release) {
  device::Stream caller;
  EXPECT_TRUE(d.rt(0).stream_create(0, &caller).is_ok());
  d.rt(0).enqueue(caller, [release] {
    while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  CollectiveArgs op = sum_op(d, 0, buf);
  op.tensors[0].stream = caller.handle;
  return op;
}

// Work that never finishes (the caller's stream never reaches the recorded point) does not hold
// the engine at shutdown: after the grace period the communicators are aborted, and after the
// give-up time the op fails with the shutdown status (its buffers are leaked, not reused).
TEST(DeviceAbort, WorkThatNeverFinishesIsGivenUpAfterShutdown) {
  std::atomic<bool> release{false};  // outlives the ranks: their streams read it
  DeviceRanks d(1);
  float* buf = device_floats(d, 0, 1.0f);
  CollectiveArgs op = held_sum_op(d, buf, &release);
  const Status shut_down(HVD_ERR_SHUT_DOWN, "hvd_shutdown was called on rank 0");
  const auto start = Clock::now();
  bool aborted = false;
  Status st = d.run(0, op, std::chrono::seconds(10), [&] {
    if (!aborted && Clock::now() - start > std::chrono::milliseconds(50)) {
      d.backend(0).abort(shut_down);
      aborted = true;
    }
  });
  EXPECT_EQ(st.code(), HVD_ERR_SHUT_DOWN) << st.message();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(d.world().calls("comm_abort"), 1);  // after the grace period
  release = true;
}

// A shutdown does not cut short what finishes within its grace period: the op succeeds and no
// communicator is aborted.
TEST(DeviceAbort, WorkThatFinishesDuringTheShutdownGraceSucceeds) {
  std::atomic<bool> release{false};  // outlives the ranks: their streams read it
  DeviceRanks d(1);
  float* buf = device_floats(d, 0, 1.0f);
  CollectiveArgs op = held_sum_op(d, buf, &release);
  const auto start = Clock::now();
  bool aborted = false;
  Status st = d.run(0, op, std::chrono::seconds(10), [&] {
    if (!aborted) {
      d.backend(0).abort(Status(HVD_ERR_SHUT_DOWN, "hvd_shutdown was called on rank 0"));
      aborted = true;
    }
    if (Clock::now() - start > std::chrono::milliseconds(50)) release = true;
  });
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(buf[0], 1.0f);
  EXPECT_EQ(d.world().calls("comm_abort"), 0);
}

// A peer that fails while this rank waits in NCCL: the engine's abort (with the peer's status)
// aborts the communicator, and the op fails with that status, not a device error.
TEST(DeviceAbort, PeerFailureAbortsTheCommunicatorAndKeepsItsStatus) {
  DeviceRanks d(2);
  // Both ranks create the communicator with a first op.
  on_ranks(2, [&](int r) { ASSERT_TRUE(d.run(r, sum_op(d, r, device_floats(d, r, 1))).is_ok()); });
  // Rank 1 never runs the second op: rank 0 waits in NCCL until its engine gives up on rank 1.
  const Status peer(HVD_ERR_PEER_FAILURE, "rank 1 died");
  const auto start = Clock::now();
  bool aborted = false;
  Status st = d.run(0, sum_op(d, 0, device_floats(d, 0, 1)), std::chrono::seconds(10), [&] {
    if (!aborted && Clock::now() - start > std::chrono::milliseconds(100)) {
      d.backend(0).abort(peer);
      aborted = true;
    }
  });
  EXPECT_EQ(st.code(), HVD_ERR_PEER_FAILURE) << st.message();
  EXPECT_EQ(d.world().calls("comm_abort"), 1);
  // Later ops fail at once with the same status.
  EXPECT_EQ(d.run(0, sum_op(d, 0, device_floats(d, 0, 1))).code(), HVD_ERR_PEER_FAILURE);
}

// An NCCL call that fails on one rank: that rank's op fails with HVD_ERR_DEVICE and NCCL's text,
// and its communicator is aborted.
TEST(DeviceAbort, FailedNcclCallAbortsTheCommunicator) {
  DeviceRanks d(1);
  d.world().inject(0, "allreduce", HostWorld::FaultMode::kReturn);
  Status st = d.run(0, sum_op(d, 0, device_floats(d, 0, 1)));
  EXPECT_EQ(st.code(), device::kErrDevice);
  EXPECT_NE(st.message().find("ncclallreduce: unhandled system error"), std::string::npos)
      << st.message();
  EXPECT_EQ(d.world().calls("comm_abort"), 1);
}

// An asynchronous NCCL error (the collective's work failed on the stream): found by the pending
// op's check of the communicator.
TEST(DeviceAbort, AsynchronousNcclErrorFailsThePendingOp) {
  DeviceRanks d(1);
  d.world().inject(0, "allreduce", HostWorld::FaultMode::kAsync);
  Status st = d.run(0, sum_op(d, 0, device_floats(d, 0, 1)));
  EXPECT_EQ(st.code(), device::kErrDevice) << st.message();
  EXPECT_NE(st.message().find("injected, asynchronous"), std::string::npos) << st.message();
  EXPECT_EQ(d.world().calls("comm_abort"), 1);
}

// A failure between NCCL calls (the output allocator refused) would leave peers waiting in
// NCCL: it becomes a device failure (fatal to the engine, which tells the peers) and aborts the
// communicator.
TEST(DeviceAbort, RefusedOutputAbortsTheCommunicator) {
  DeviceRanks d(1);
  CollectiveArgs op = d.args(0, Collective::kAllgather, HVD_INT32);
  op.sizes = {4};
  TensorArgs t;
  t.name = "g";
  t.shape = {4};
  t.input = device_floats(d, 0, 1.0f);
  t.allocate_output = [](const std::vector<int64_t>&, size_t) -> void* { return nullptr; };
  op.tensors.push_back(t);
  Status st = d.run(0, op);
  EXPECT_EQ(st.code(), device::kErrDevice);
  EXPECT_NE(st.message().find("output allocator returned NULL"), std::string::npos) << st.message();
  EXPECT_EQ(d.world().calls("comm_abort"), 1);
}

}  // namespace
