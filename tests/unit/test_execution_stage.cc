// The execution stage (core/execution/stage.h) on one rank over a fake backend that finishes
// collectives when the test says so: entries complete only then, engine-run ops wait for the
// collectives before them, and a failed transfer ends the engine's work.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/execution/stage.h"
#include "fake_backend.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::Response;
using hvdc::core::TensorEntry;

class StageTest : public ::testing::Test {
 protected:
  StageTest() : sets_(1, 0, {}), tracer_(false) {
    hvdc::core::NegotiationConfig negotiation;
    hvdc::core::NegotiationContext nctx;
    nctx.sets = &sets_.members();
    nctx.queue = &queue_;
    nctx.stats = &stats_;
    nctx.tracer = &tracer_;
    nctx.fail = [this](const Status& st) { fail(st); };
    nctx.terminated = &terminated_;
    negotiation_ = std::make_unique<hvdc::core::Negotiation>(negotiation, std::move(nctx));
    hvdc::core::StageContext ctx;
    ctx.sets = &sets_;
    ctx.queue = &queue_;
    ctx.stats = &stats_;
    ctx.tracer = &tracer_;
    ctx.negotiation = negotiation_.get();
    ctx.fail = [this](const Status& st) { fail(st); };
    ctx.interrupt = [this] { return terminated_; };
    ctx.peer_shutdown_reached = [] { return false; };
    ctx.terminated = &terminated_;
    std::map<int32_t, std::unique_ptr<hvdc::ops::Backend>> backends;
    backends[HVD_DEVICE_CPU] = std::make_unique<hvdc_test::FakeBackend>(&started_);
    stage_ = std::make_unique<hvdc::core::ExecutionStage>(std::move(backends), std::move(ctx));
  }

  void fail(const Status& st) {
    if (terminated_.is_ok()) terminated_ = st;
  }

  std::shared_ptr<OpState> submit(const std::string& name, OpType type = OpType::kAllreduce) {
    TensorEntry e;
    e.request.name = name;
    e.request.op_type = type;
    e.request.dtype = HVD_FLOAT32;
    e.request.shape = {2};
    e.state = std::make_shared<OpState>(nullptr, nullptr);
    std::shared_ptr<OpState> state = e.state;
    EXPECT_TRUE(queue_.push(std::move(e)).is_ok());
    std::vector<hvdc::core::Request> reported;
    queue_.pop_new(&reported);
    return state;
  }

  static Response response(const std::string& name, OpType type = OpType::kAllreduce) {
    Response r;
    r.op_type = type;
    r.dtype = HVD_FLOAT32;
    r.names = {name};
    r.counts = {2};
    return r;
  }

  hvdc::core::MemberSets sets_;
  hvdc::core::TensorQueue queue_;
  hvdc::core::EngineStats stats_;
  hvdc::core::Tracer tracer_;
  Status terminated_;
  std::unique_ptr<hvdc::core::Negotiation> negotiation_;
  std::vector<std::unique_ptr<hvdc_test::Started>> started_;
  std::unique_ptr<hvdc::core::ExecutionStage> stage_;
  std::deque<Response> agreed_;
};

TEST_F(StageTest, AnEntryCompletesWhenItsBackendFinishes) {
  std::shared_ptr<OpState> a = submit("a");
  agreed_.push_back(response("a"));
  EXPECT_TRUE(stage_->execute(&agreed_));
  EXPECT_TRUE(agreed_.empty());
  ASSERT_EQ(started_.size(), 1u);
  EXPECT_EQ(started_[0]->args.group.seq, 1u);  // the set's first collective
  EXPECT_FALSE(a->done());
  EXPECT_FALSE(stage_->finish_executed());
  EXPECT_EQ(stage_->running().size(), 1u);
  started_[0]->done = true;
  EXPECT_TRUE(stage_->finish_executed());
  ASSERT_TRUE(a->done());
  EXPECT_TRUE(a->result().is_ok());
  EXPECT_TRUE(stage_->idle());
  EXPECT_EQ(stats_.collectives.load(), 1u);
}

// A process set change (here a join) runs in the engine: only after the collectives before it.
TEST_F(StageTest, EngineRunOpsWaitForTheCollectivesBeforeThem) {
  std::shared_ptr<OpState> a = submit("a");
  std::shared_ptr<OpState> join = submit(hvdc::core::kJoinName, OpType::kJoin);
  agreed_.push_back(response("a"));
  Response j = response(hvdc::core::kJoinName, OpType::kJoin);
  j.root = 0;
  agreed_.push_back(j);
  stage_->execute(&agreed_);
  EXPECT_EQ(agreed_.size(), 1u);  // the join waits
  EXPECT_FALSE(join->done());
  started_[0]->done = true;
  stage_->finish_executed();
  stage_->execute(&agreed_);
  EXPECT_TRUE(agreed_.empty());
  ASSERT_TRUE(join->done());
  EXPECT_EQ(join->result_value(), 0);
}

TEST_F(StageTest, ANegotiatedErrorFailsItsTensorOnly) {
  std::shared_ptr<OpState> a = submit("a");
  Response error = response("a");
  error.kind = hvdc::core::ResponseKind::kError;
  error.error_code = HVD_ERR_MISMATCH;
  error.error_message = "Mismatched ALLREDUCE data type for tensor 'a'";
  agreed_.push_back(error);
  stage_->execute(&agreed_);
  ASSERT_TRUE(a->done());
  EXPECT_EQ(a->result().code(), HVD_ERR_MISMATCH);
  EXPECT_TRUE(terminated_.is_ok());
  EXPECT_TRUE(started_.empty());
}

TEST_F(StageTest, AFailedTransferEndsTheWork) {
  std::shared_ptr<OpState> a = submit("a");
  agreed_.push_back(response("a"));
  stage_->execute(&agreed_);
  started_[0]->done = true;
  started_[0]->result = Status(HVD_ERR_TRANSPORT, "connection reset");
  stage_->finish_executed();
  EXPECT_EQ(terminated_.code(), HVD_ERR_TRANSPORT);
  ASSERT_TRUE(a->done());
  EXPECT_EQ(a->result().code(), HVD_ERR_TRANSPORT);
  EXPECT_NE(a->result().message().find("'a'"), std::string::npos) << a->result().message();
  agreed_.push_back(response("b"));
  EXPECT_TRUE(stage_->execute(&agreed_));  // nothing starts once the work ended
  EXPECT_EQ(started_.size(), 1u);
}

}  // namespace
