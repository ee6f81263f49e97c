// The execution stage (core/execution/executor.h) over a fake backend that finishes its
// collectives only when the test says so, as a backend on a device stream would.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/execution/executor.h"
#include "fake_backend.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::Executor;
using hvdc::core::FinishedOp;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::Response;
using hvdc::core::TensorEntry;
using hvdc::ops::Backend;
using hvdc::ops::CollectiveArgs;
using hvdc_test::FakeBackend;
using hvdc_test::Started;

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() : executor_(backends()) {}

  std::map<int32_t, std::unique_ptr<Backend>> backends() {
    std::map<int32_t, std::unique_ptr<Backend>> out;
    out[HVD_DEVICE_CPU] = std::make_unique<FakeBackend>(&started_);
    return out;
  }

  static Response allreduce(const std::vector<std::string>& names) {
    Response r;
    r.op_type = OpType::kAllreduce;
    r.dtype = HVD_FLOAT32;
    r.names = names;
    r.counts.assign(names.size(), 4);
    return r;
  }

  static TensorEntry entry(const std::string& name, int32_t device_type = HVD_DEVICE_CPU) {
    TensorEntry e;
    e.request.name = name;
    e.request.dtype = HVD_FLOAT32;
    e.request.device_type = device_type;
    e.request.shape = {4};
    e.state = std::make_shared<OpState>(nullptr, nullptr);
    return e;
  }

  void start(const Response& response, std::vector<TensorEntry> entries, bool joined = false) {
    hvdc::ops::Group group;
    group.members = {0, 1};
    executor_.start(Response(response), std::move(entries), group, joined, nullptr);
  }

  static std::vector<std::string> names_of(const std::vector<FinishedOp>& ops) {
    std::vector<std::string> out;
    for (const FinishedOp& op : ops) out.push_back(op.response.names[0]);
    return out;
  }

  std::vector<std::unique_ptr<Started>> started_;
  std::vector<FinishedOp> poll() {
    std::vector<FinishedOp> finished;
    executor_.poll(&finished);
    return finished;
  }

  Executor executor_;
};

TEST_F(ExecutorTest, CollectiveStaysInFlightUntilItsBackendFinishesIt) {
  start(allreduce({"a"}), {entry("a")});
  ASSERT_EQ(started_.size(), 1u);
  EXPECT_FALSE(executor_.idle());
  EXPECT_TRUE(poll().empty());
  ASSERT_EQ(executor_.running().size(), 1u);
  EXPECT_EQ(executor_.running()[0]->names[0], "a");
  started_[0]->done = true;
  std::vector<FinishedOp> finished = poll();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_TRUE(finished[0].status.is_ok());
  ASSERT_EQ(finished[0].entries.size(), 1u);
  EXPECT_EQ(finished[0].entries[0].request.name, "a");
  EXPECT_TRUE(executor_.idle());
}

// The caller's vector is kept between polls for its storage: each poll replaces its contents.
TEST_F(ExecutorTest, PollReplacesWhatTheVectorHeld) {
  start(allreduce({"a"}), {entry("a")});
  started_[0]->done = true;
  std::vector<FinishedOp> kept;
  executor_.poll(&kept);
  ASSERT_EQ(names_of(kept), (std::vector<std::string>{"a"}));
  start(allreduce({"b"}), {entry("b")});
  executor_.poll(&kept);
  EXPECT_TRUE(kept.empty());  // b runs; a was returned before
  started_[1]->done = true;
  executor_.poll(&kept);
  EXPECT_EQ(names_of(kept), (std::vector<std::string>{"b"}));
}

// Completion follows the start order: a later collective that finished first waits.
TEST_F(ExecutorTest, FinishedOpsComeBackInStartOrder) {
  start(allreduce({"a"}), {entry("a")});
  start(allreduce({"b"}), {entry("b")});
  started_[1]->done = true;
  started_[1]->result = Status(HVD_ERR_TRANSPORT, "b failed");
  EXPECT_TRUE(poll().empty());
  started_[0]->done = true;
  std::vector<FinishedOp> finished = poll();
  EXPECT_EQ(names_of(finished), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(finished[0].status.is_ok());
  EXPECT_EQ(finished[1].status.code(), HVD_ERR_TRANSPORT);
}

TEST_F(ExecutorTest, BackendSeesTheAgreedParametersAndBuffers) {
  Response r = allreduce({"a", "b"});
  r.reduce_op = HVD_OP_AVERAGE;
  r.prescale = 0.5;
  r.postscale = 2;
  std::vector<TensorEntry> entries = {entry("a"), entry("b")};
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  entries[1].input = in;
  entries[1].output = out;
  start(r, std::move(entries));
  ASSERT_EQ(started_.size(), 1u);
  const CollectiveArgs& args = started_[0]->args;
  EXPECT_EQ(args.type, hvdc::ops::Collective::kAllreduce);
  EXPECT_EQ(args.dtype, HVD_FLOAT32);
  EXPECT_EQ(args.reduce_op, HVD_OP_AVERAGE);
  EXPECT_EQ(args.prescale, 0.5);
  EXPECT_EQ(args.postscale, 2);
  EXPECT_EQ(args.group.size(), 2);
  ASSERT_EQ(args.tensors.size(), 2u);
  EXPECT_EQ(args.tensors[1].name, "b");
  EXPECT_EQ(args.tensors[1].input, in);
  EXPECT_EQ(args.tensors[1].output, out);
  EXPECT_EQ(args.tensors[1].count, 4);
}

// A joined rank lacks some of a fused allreduce's tensors: the backend gets buffer-less tensors
// of the agreed count, for which it contributes zeros.
TEST_F(ExecutorTest, JoinedRankPassesBufferlessTensorsForWhatItLacks) {
  start(allreduce({"a", "b", "c"}), {entry("b")}, /*joined=*/true);
  ASSERT_EQ(started_.size(), 1u);
  const CollectiveArgs& args = started_[0]->args;
  ASSERT_EQ(args.tensors.size(), 3u);
  EXPECT_EQ(args.tensors[0].output, nullptr);
  EXPECT_EQ(args.tensors[0].count, 4);
  EXPECT_EQ(args.tensors[2].name, "c");
  EXPECT_TRUE(static_cast<bool>(args.tensors[1].allocate_output));
}

TEST_F(ExecutorTest, MissingEntriesOrBackendFinishAtOnceWithAnError) {
  start(allreduce({"a", "b"}), {entry("a")});  // not joined: "b" must be here
  start(allreduce({"gpu"}), {entry("gpu", HVD_DEVICE_CUDA)});
  EXPECT_TRUE(started_.empty());
  std::vector<FinishedOp> finished = poll();
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[0].status.code(), HVD_ERR_INTERNAL);
  EXPECT_EQ(finished[1].status.code(), HVD_ERR_UNSUPPORTED);
  EXPECT_NE(finished[1].status.message().find("'gpu'"), std::string::npos);
  EXPECT_TRUE(executor_.idle());
}

TEST_F(ExecutorTest, EngineOpsAreNotCollectives) {
  Response join;
  join.op_type = OpType::kJoin;
  join.names = {"join"};
  start(join, {entry("join")});
  std::vector<FinishedOp> finished = poll();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].status.code(), HVD_ERR_INTERNAL);
}

}  // namespace
