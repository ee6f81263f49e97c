// Termination (core/faults/termination.h) on ranks of one test thread over the fake transport:
// the first cause wins and fails what is pending, the notice to the peers goes out once with the
// completed-op counts, a peer's notice ends the work with its status, a peer's shutdown ends it
// only after the collectives that peer completed, and the checks made from inside a wait.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/faults/termination.h"
#include "core/message.h"
#include "fake_transport.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::OpState;
using hvdc::core::Terminate;
using hvdc::core::Termination;
using hvdc::transport::make_tag;
using hvdc::transport::TagKind;
using hvdc_test::FakeNetwork;
using hvdc_test::FakeTransport;

// A transport whose connection to a peer failed (what UCX's error callback reports).
class FailedPeerTransport : public FakeTransport {
 public:
  using FakeTransport::FakeTransport;
  Status check_peers() const override { return failure; }
  Status failure;
};

// One rank: its transport, sets, queue, agreed responses, stall agreement and termination.
struct Rank {
  enum Kind { kSingle, kConnected, kWithStalls };
  Rank(std::shared_ptr<FakeNetwork> net, int rank, Kind kind = kConnected)
      : rank(rank), transport(net, rank), sets(static_cast<int>(net->inbox.size()), rank, {}) {
    if (kind == kWithStalls) stalls = std::make_unique<hvdc::core::StallAgreement>(&transport, 60);
    hvdc::core::TerminationContext ctx;
    ctx.rank = rank;
    ctx.transport = kind == kSingle ? nullptr : &transport;
    ctx.sets = &sets;
    ctx.queue = &queue;
    ctx.agreed = &agreed;
    ctx.stalls = stalls.get();
    termination = std::make_unique<Termination>(std::move(ctx));
  }

  std::shared_ptr<OpState> submit(const std::string& name) {
    hvdc::core::TensorEntry e;
    e.request.name = name;
    e.request.op_type = hvdc::core::OpType::kAllreduce;
    e.request.dtype = HVD_FLOAT32;
    e.request.shape = {4};
    e.state = std::make_shared<OpState>(nullptr, nullptr);
    std::shared_ptr<OpState> state = e.state;
    EXPECT_TRUE(queue.push(std::move(e)).is_ok());
    return state;
  }
  uint64_t& op_seq() { return sets.member(0)->op_seq; }

  int rank;
  FailedPeerTransport transport;
  hvdc::core::MemberSets sets;
  hvdc::core::TensorQueue queue;
  std::deque<hvdc::core::Response> agreed;
  std::unique_ptr<hvdc::core::StallAgreement> stalls;
  std::unique_ptr<Termination> termination;
};

// The Terminate notices waiting in `rank`'s inbox, taken out.
std::vector<Terminate> notices_to(FakeNetwork& net, int rank) {
  std::vector<Terminate> out;
  for (auto& message : net.inbox[rank]) {
    if ((message.tag & hvdc::transport::kTagKindMask) != make_tag(TagKind::kTerminate, 0, 0)) {
      continue;
    }
    Terminate notice;
    EXPECT_TRUE(hvdc::core::decode(message.bytes, &notice).is_ok());
    out.push_back(notice);
  }
  return out;
}

void send_notice(FakeNetwork& net, int from, int to, const std::string& bytes) {
  net.inbox[to].push_back({make_tag(TagKind::kTerminate, from, 0), bytes});
}

// `rank` shuts down having completed `completed` collectives of set 0; every peer gets its notice.
void shut_down(Rank& rank, uint64_t completed) {
  rank.op_seq() = completed;
  rank.termination->terminate(
      Status(HVD_ERR_SHUT_DOWN, "hvd_shutdown was called on rank " + std::to_string(rank.rank)),
      true);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Termination, TheFirstCauseWinsAndFailsWhatIsPending) {
  auto net = std::make_shared<FakeNetwork>(1);
  Rank r(net, 0, Rank::kSingle);
  std::shared_ptr<OpState> pending = r.submit("grad");
  r.agreed.emplace_back();
  EXPECT_TRUE(r.termination->status().is_ok());
  r.termination->terminate(Status(HVD_ERR_PEER_FAILURE, "first"), true);
  r.termination->terminate(Status(HVD_ERR_ABORTED, "second"), true);
  EXPECT_EQ(r.termination->status().code(), HVD_ERR_PEER_FAILURE);
  EXPECT_EQ(r.termination->status().message(), "first");
  EXPECT_EQ(r.termination->async_error().message(), "first");
  ASSERT_TRUE(pending->done());
  EXPECT_EQ(pending->result().code(), HVD_ERR_PEER_FAILURE);
  EXPECT_TRUE(contains(pending->result().message(), "'grad'")) << pending->result().message();
  EXPECT_TRUE(r.agreed.empty());
  // Later submissions fail at once with the cause.
  hvdc::core::TensorEntry late;
  late.request.name = "late";
  late.state = std::make_shared<OpState>(nullptr, nullptr);
  EXPECT_EQ(r.queue.push(std::move(late)).code(), HVD_ERR_PEER_FAILURE);
}

TEST(Termination, AShutdownIsNotAnAsyncError) {
  auto net = std::make_shared<FakeNetwork>(1);
  Rank r(net, 0, Rank::kSingle);
  r.termination->terminate(Status(HVD_ERR_SHUT_DOWN, "bye"), true);
  EXPECT_EQ(r.termination->status().code(), HVD_ERR_SHUT_DOWN);
  EXPECT_TRUE(r.termination->async_error().is_ok());
}

TEST(Termination, PeersGetOneNoticeWithTheCompletedOps) {
  auto net = std::make_shared<FakeNetwork>(3);
  Rank r(net, 1);
  r.op_seq() = 7;
  r.termination->terminate(Status(HVD_ERR_ABORTED, "rank 1 aborted"), true);
  r.termination->terminate(Status(HVD_ERR_TIMEOUT, "later"), true);
  EXPECT_TRUE(net->inbox[1].empty());  // none to itself
  for (int peer : {0, 2}) {
    const std::vector<Terminate> notices = notices_to(*net, peer);
    ASSERT_EQ(notices.size(), 1u) << peer;
    EXPECT_EQ(notices[0].code, HVD_ERR_ABORTED);
    EXPECT_EQ(notices[0].rank, 1);
    EXPECT_EQ(notices[0].reason, "rank 1 aborted");
    EXPECT_EQ(notices[0].completed_ops, (std::vector<int64_t>{0, 7}));
    EXPECT_EQ(hvdc::transport::tag_source(net->inbox[peer].front().tag), 1);
  }
}

TEST(Termination, ACauseLearnedFromAPeerIsNotSentOn) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r(net, 0);
  r.termination->terminate(Status(HVD_ERR_ABORTED, "told"), false);
  EXPECT_TRUE(net->inbox[1].empty());
}

TEST(Termination, APeersNoticeFailsPendingOpsWithItsStatus) {
  auto net = std::make_shared<FakeNetwork>(3);
  Rank r0(net, 0);
  Rank r2(net, 2);
  std::shared_ptr<OpState> pending = r2.submit("w");
  r0.termination->terminate(Status(HVD_ERR_ABORTED, "hvd_abort was called on rank 0: x"), true);
  EXPECT_TRUE(r2.termination->poll());
  EXPECT_EQ(r2.termination->status().code(), HVD_ERR_ABORTED);
  EXPECT_EQ(r2.termination->status().message(), "hvd_abort was called on rank 0: x");
  EXPECT_EQ(r2.termination->async_error().code(), HVD_ERR_ABORTED);
  ASSERT_TRUE(pending->done());
  EXPECT_EQ(pending->result().code(), HVD_ERR_ABORTED);
  EXPECT_TRUE(contains(pending->result().message(), "rank 0: x")) << pending->result().message();
  EXPECT_TRUE(notices_to(*net, 0).empty());  // rank 2 does not answer with a notice
  EXPECT_FALSE(r2.termination->poll());      // nothing more came
}

TEST(Termination, AGarbledNoticeEndsTheWorkNamingTheSender) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r(net, 0);
  send_notice(*net, 1, 0, "garbage");
  EXPECT_TRUE(r.termination->poll());
  EXPECT_FALSE(r.termination->status().is_ok());
  EXPECT_TRUE(contains(r.termination->status().message(), "notice from rank 1"))
      << r.termination->status().message();
  EXPECT_TRUE(net->inbox[1].empty());
}

TEST(Termination, ANoticeWithoutAnErrorCodeIsAnInternalError) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r(net, 0);
  send_notice(*net, 1, 0, hvdc::core::encode(Terminate{HVD_SUCCESS, 1, "fine", {}}));
  EXPECT_TRUE(r.termination->poll());
  EXPECT_EQ(r.termination->status().code(), HVD_ERR_INTERNAL);
  EXPECT_TRUE(contains(r.termination->status().message(), "code 0 is not an error"))
      << r.termination->status().message();
}

TEST(Termination, APeersShutdownEndsTheWorkAfterWhatItCompleted) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r0(net, 0);
  Rank r1(net, 1);
  shut_down(r0, 3);
  r1.op_seq() = 2;
  std::shared_ptr<OpState> pending = r1.submit("g");
  EXPECT_TRUE(r1.termination->poll());  // the notice came; one collective is still to run
  EXPECT_TRUE(r1.termination->status().is_ok());
  EXPECT_FALSE(r1.termination->finish_peer_shutdown());
  EXPECT_FALSE(pending->done());
  r1.op_seq() = 3;
  EXPECT_TRUE(r1.termination->poll());
  EXPECT_EQ(r1.termination->status().code(), HVD_ERR_SHUT_DOWN);
  EXPECT_TRUE(contains(r1.termination->status().message(),
                       "rank 0 has shut down (hvd_shutdown was called on rank 0)"))
      << r1.termination->status().message();
  EXPECT_TRUE(r1.termination->async_error().is_ok());
  ASSERT_TRUE(pending->done());
  EXPECT_EQ(pending->result().code(), HVD_ERR_SHUT_DOWN);
  EXPECT_TRUE(notices_to(*net, 0).empty());
}

TEST(Termination, TheFewestOpsOverPeersThatShutDownCount) {
  auto net = std::make_shared<FakeNetwork>(3);
  Rank r(net, 0);
  // Rank 1 completed 5 collectives of set 0, rank 2 only 4; set 9 is not this rank's.
  send_notice(*net, 1, 0, hvdc::core::encode(Terminate{HVD_ERR_SHUT_DOWN, 1, "a", {0, 5, 9, 1}}));
  send_notice(*net, 2, 0, hvdc::core::encode(Terminate{HVD_ERR_SHUT_DOWN, 2, "b", {0, 4}}));
  r.op_seq() = 3;
  EXPECT_TRUE(r.termination->poll());
  EXPECT_TRUE(r.termination->status().is_ok());
  r.op_seq() = 4;
  EXPECT_TRUE(r.termination->finish_peer_shutdown());
  // The first notice names the rank.
  EXPECT_TRUE(contains(r.termination->status().message(), "rank 1 has shut down (a)"))
      << r.termination->status().message();
}

TEST(Termination, AFailedPeerConnectionEndsTheWorkAndTellsThePeers) {
  auto net = std::make_shared<FakeNetwork>(3);
  Rank r(net, 0);
  EXPECT_FALSE(r.termination->poll());
  r.transport.failure = Status(HVD_ERR_PEER_FAILURE, "connection to rank 2 failed");
  EXPECT_TRUE(r.termination->poll());
  EXPECT_EQ(r.termination->status().code(), HVD_ERR_PEER_FAILURE);
  EXPECT_EQ(r.termination->status().message(),
            "rank 0: connection to rank 2 failed; that process died or its host is unreachable");
  EXPECT_EQ(notices_to(*net, 1).size(), 1u);
  EXPECT_EQ(notices_to(*net, 2).size(), 1u);  // best effort, to the failed peer too
  EXPECT_FALSE(r.termination->poll());        // reported once
}

TEST(Termination, AnAbortRequestEndsTheWorkAtTheNextPoll) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r(net, 1);
  r.termination->request_abort("bad loss");
  r.termination->request_abort("second reason");
  EXPECT_TRUE(r.termination->status().is_ok());  // only the engine thread ends the work
  EXPECT_TRUE(r.termination->poll());
  EXPECT_EQ(r.termination->status().code(), HVD_ERR_ABORTED);
  EXPECT_EQ(r.termination->status().message(), "hvd_abort was called on rank 1: bad loss");
  ASSERT_EQ(notices_to(*net, 0).size(), 1u);
  EXPECT_EQ(notices_to(*net, 0)[0].code, HVD_ERR_ABORTED);
}

TEST(Termination, AnAbortWithoutAReasonSaysSo) {
  auto net = std::make_shared<FakeNetwork>(1);
  Rank r(net, 0, Rank::kSingle);
  r.termination->request_abort("");
  EXPECT_TRUE(r.termination->poll());
  EXPECT_EQ(r.termination->status().message(), "hvd_abort was called on rank 0: (no reason given)");
}

TEST(Termination, InterruptReturnsTheCauseThatCameDuringAWait) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r0(net, 0);
  Rank r1(net, 1);
  EXPECT_TRUE(r1.termination->interrupt(nullptr).is_ok());
  r0.termination->terminate(Status(HVD_ERR_TIMEOUT, "rank 0 timed out"), true);
  const Status st = r1.termination->interrupt(nullptr);
  EXPECT_EQ(st.code(), HVD_ERR_TIMEOUT);
  EXPECT_EQ(st.message(), "rank 0 timed out");
  r1.termination->request_abort("ignored");  // the first cause stays
  EXPECT_EQ(r1.termination->interrupt(nullptr).code(), HVD_ERR_TIMEOUT);
}

TEST(Termination, InterruptEndsACollectiveThePeerThatShutDownNeverRan) {
  auto net = std::make_shared<FakeNetwork>(2);
  Rank r0(net, 0);
  Rank r1(net, 1);
  shut_down(r0, 3);
  const hvdc::core::SetState* executing = r1.sets.member(0);
  r1.op_seq() = 3;  // op_seq counts the running collective: the peer completed it
  EXPECT_TRUE(r1.termination->interrupt(executing).is_ok());
  EXPECT_TRUE(r1.termination->interrupt(nullptr).is_ok());  // outside a collective: wait
  r1.op_seq() = 4;                                          // the peer never ran this one
  EXPECT_EQ(r1.termination->interrupt(executing).code(), HVD_ERR_SHUT_DOWN);
}

TEST(Termination, PollAnswersStallReports) {
  auto net = std::make_shared<FakeNetwork>(2);
  FakeTransport peer(net, 1);
  Rank r(net, 0, Rank::kWithStalls);
  peer.send_message(0, make_tag(TagKind::kStall, 1, 0),
                    hvdc::core::encode(hvdc::core::StallReport{{0}}));
  EXPECT_TRUE(r.termination->poll());
  ASSERT_EQ(net->inbox[1].size(), 1u);  // this rank's answer: it waits for nobody
  EXPECT_EQ(net->inbox[1].front().tag, make_tag(TagKind::kStall, 0, 0));
  EXPECT_TRUE(r.termination->status().is_ok());
}

}  // namespace
