// The lane on the boards (src/ops/cpu/local/board_lane.cc): two members' boards in one process,
// each mapping the other's as a peer would. Every agreement is decided once, whoever decides,
// and a member that posted learns the verdict even after later agreements were decided.
#include <unistd.h>

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "memory/peer_regions.h"
#include "memory/shared_regions.h"
#include "ops/cpu/local/board.h"

namespace hvdc::ops::cpu::local {
namespace {

using ops::LaneBuffer;
using ops::LaneVerdict;

class BoardLaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int m = 0; m < 2; ++m) {
      boards_[m] = std::make_unique<Board>(2, m);
      ASSERT_TRUE(boards_[m]->create().is_ok());
    }
    for (int m = 0; m < 2; ++m) {
      const int peer = 1 - m;
      ASSERT_TRUE(boards_[m]->open_peer(peer, getpid(), boards_[peer]->ref(), regions_).is_ok());
    }
  }
  Board& a() { return *boards_[0]; }
  Board& b() { return *boards_[1]; }
  // Both boards' last descriptions were of buffer_, as of now.
  void describe_buffer_on_both() {
    for (auto& board : boards_) board->note_described(whole(), regions_now());
  }
  static uint64_t regions_now() { return memory::regions_generation(); }
  // Both members post `desc` for op `op` on `posted`, and the op ran on `ran_on`.
  void describe_on_both(const std::string& desc, uint64_t op, const LaneBuffer& posted,
                        const LaneBuffer& ran_on) {
    for (auto& board : boards_) {
      board->post_description(desc, op, posted);
      board->note_described(ran_on, regions_now());
    }
  }
  // Both members post agreement k on `buffer`, which runs: whether both take it as described
  // already (they must agree).
  bool described_run(uint64_t k, const LaneBuffer& buffer) {
    EXPECT_TRUE(a().lane_post(k, "sig", buffer));
    EXPECT_TRUE(b().lane_post(k, "sig", buffer));
    EXPECT_EQ(LaneVerdict::kRun, a().lane_decide(k));
    EXPECT_EQ(LaneVerdict::kRun, b().lane_decide(k));
    const bool run = a().take_described_run();
    EXPECT_EQ(run, b().take_described_run()) << "agreement " << k;
    return run;
  }
  LaneBuffer whole() { return {buffer_, buffer_, sizeof buffer_}; }

  alignas(64) char buffer_[256] = {0};

  memory::PeerRegions regions_;
  std::unique_ptr<Board> boards_[2];
};

TEST_F(BoardLaneTest, EqualPostsRunOnBothMembers) {
  ASSERT_EQ(1u, a().lane_next());
  ASSERT_EQ(1u, b().lane_next());
  ASSERT_TRUE(a().lane_post(1, "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kUndecided, a().lane_decide(1));  // b has not posted
  EXPECT_TRUE(b().lane_peer_posted(1));
  ASSERT_TRUE(b().lane_post(1, "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kRun, b().lane_decide(1));
  EXPECT_EQ(LaneVerdict::kRun, a().lane_decide(1));
  // Decided to run: a late withdrawal cannot void it.
  EXPECT_EQ(LaneVerdict::kRun, a().lane_withdraw(1));
  EXPECT_EQ(2u, a().lane_next());
  EXPECT_EQ(2u, b().lane_next());
}

TEST_F(BoardLaneTest, DifferentPostsVoidOnBothMembers) {
  ASSERT_TRUE(a().lane_post(1, "grad.0", {}));
  ASSERT_TRUE(b().lane_post(1, "grad.1", {}));
  EXPECT_EQ(LaneVerdict::kVoid, a().lane_decide(1));
  EXPECT_EQ(LaneVerdict::kVoid, b().lane_decide(1));
  // Same length, one byte apart.
  ASSERT_TRUE(a().lane_post(2, std::string("x\0y", 3), {}));
  ASSERT_TRUE(b().lane_post(2, std::string("x\0z", 3), {}));
  EXPECT_EQ(LaneVerdict::kVoid, b().lane_decide(2));
  EXPECT_EQ(LaneVerdict::kVoid, a().lane_decide(2));
}

TEST_F(BoardLaneTest, WithdrawalBeforeThePeerPostsVoids) {
  ASSERT_TRUE(a().lane_post(1, "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kVoid, a().lane_withdraw(1));
  // b comes late with the same op: it sees agreement 1 decided and posts for 2.
  EXPECT_EQ(2u, b().lane_next());
  ASSERT_TRUE(b().lane_post(2, "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kUndecided, b().lane_decide(2));
}

TEST_F(BoardLaneTest, PeerAnswersAPostWithAVoid) {
  ASSERT_TRUE(a().lane_post(1, "grad.0", {}));
  const uint64_t k = b().lane_next();
  ASSERT_TRUE(b().lane_peer_posted(k));
  EXPECT_EQ(LaneVerdict::kVoid, b().lane_withdraw(k));
  EXPECT_EQ(LaneVerdict::kVoid, a().lane_decide(1));
  EXPECT_FALSE(b().lane_peer_posted(b().lane_next()));
}

TEST_F(BoardLaneTest, PosterLearnsAVoidAfterLaterAgreements) {
  // b posted 1 but does not look again while a voids 1 and then 2 and 3 are decided.
  ASSERT_TRUE(b().lane_post(1, "late", {}));
  EXPECT_EQ(LaneVerdict::kVoid, a().lane_withdraw(a().lane_next()));
  for (uint64_t k = 2; k <= 3; ++k) {
    ASSERT_EQ(k, a().lane_next());
    ASSERT_TRUE(a().lane_post(k, "next", {}));
    EXPECT_EQ(LaneVerdict::kVoid, a().lane_withdraw(k));
  }
  EXPECT_EQ(LaneVerdict::kVoid, b().lane_decide(1));
  EXPECT_EQ(4u, b().lane_next());
}

TEST_F(BoardLaneTest, StalePostDoesNotDecideALaterAgreement) {
  ASSERT_TRUE(a().lane_post(1, "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kVoid, a().lane_withdraw(1));
  // a posts 2; b's counter still says 1 (it never posted): 2 stays undecided.
  ASSERT_TRUE(a().lane_post(2, "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kUndecided, a().lane_decide(2));
  ASSERT_TRUE(b().lane_post(b().lane_next(), "grad.0", {}));
  EXPECT_EQ(LaneVerdict::kRun, a().lane_decide(2));
}

TEST_F(BoardLaneTest, SleepersAreFlaggedToTheirPeers) {
  EXPECT_EQ(0u, a().lane_sleepers());
  b().lane_sleep(true);
  EXPECT_EQ(uint64_t{1} << 1, a().lane_sleepers());
  EXPECT_EQ(0u, b().lane_sleepers());  // a member does not wake itself
  b().lane_sleep(false);
  EXPECT_EQ(0u, a().lane_sleepers());
}

// A post names its buffer as described already only where the board's last description was
// of that buffer and no region came or went since; the op run on such posts takes it once.
TEST_F(BoardLaneTest, PostsOfTheDescribedBufferSkipTheDescriptions) {
  describe_buffer_on_both();
  ASSERT_TRUE(a().lane_post(1, "grad.0", whole()));
  ASSERT_TRUE(b().lane_post(1, "grad.0", whole()));
  EXPECT_FALSE(a().take_described_run());  // not decided yet
  ASSERT_EQ(LaneVerdict::kRun, a().lane_decide(1));
  ASSERT_EQ(LaneVerdict::kRun, b().lane_decide(1));
  EXPECT_TRUE(a().take_described_run());
  EXPECT_TRUE(b().take_described_run());
  EXPECT_FALSE(a().take_described_run());  // once per agreement
}

TEST_F(BoardLaneTest, OneMemberWithAnotherBufferMakesEveryMemberDescribe) {
  describe_buffer_on_both();
  ASSERT_TRUE(a().lane_post(1, "grad.0", whole()));
  ASSERT_TRUE(
      b().lane_post(1, "grad.0", {buffer_ + 64, buffer_ + 64, 128}));  // same op, other buffer
  ASSERT_EQ(LaneVerdict::kRun, a().lane_decide(1));
  ASSERT_EQ(LaneVerdict::kRun, b().lane_decide(1));
  EXPECT_FALSE(a().take_described_run());
  EXPECT_FALSE(b().take_described_run());
  // The same buffer with another length, or none (out of place), names nothing either.
  ASSERT_TRUE(a().lane_post(2, "grad.0", {buffer_, buffer_, 128}));
  ASSERT_TRUE(b().lane_post(2, "grad.0", {}));
  ASSERT_EQ(LaneVerdict::kRun, a().lane_decide(2));
  EXPECT_FALSE(a().take_described_run());
}

TEST_F(BoardLaneTest, ARegionAllocatedSinceOrAForgottenDescriptionNamesNothing) {
  describe_buffer_on_both();
  void* region = nullptr;
  ASSERT_TRUE(memory::allocate_region(4096, &region).is_ok());  // a buffer may have moved into it
  ASSERT_TRUE(a().lane_post(1, "grad.0", whole()));
  ASSERT_TRUE(b().lane_post(1, "grad.0", whole()));
  ASSERT_EQ(LaneVerdict::kRun, a().lane_decide(1));
  EXPECT_FALSE(a().take_described_run());
  ASSERT_TRUE(memory::free_region(region).is_ok());
  describe_buffer_on_both();
  b().forget_described();
  ASSERT_TRUE(a().lane_post(2, "grad.0", whole()));
  ASSERT_TRUE(b().lane_post(2, "grad.0", whole()));
  ASSERT_EQ(LaneVerdict::kRun, b().lane_decide(2));
  EXPECT_FALSE(b().take_described_run());
}

TEST_F(BoardLaneTest, AVoidedPostIsNotTakenAsDescribed) {
  describe_buffer_on_both();
  ASSERT_TRUE(a().lane_post(1, "grad.0", whole()));
  ASSERT_TRUE(b().lane_post(1, "grad.1", whole()));
  ASSERT_EQ(LaneVerdict::kVoid, a().lane_decide(1));
  EXPECT_FALSE(a().take_described_run());
}

// Each member keeps the description of every single buffer in place in an area of its own: a
// post of any of them names it as described, and the peer reads the description from the area
// the post named. A description with no buffer goes to the general area and evicts none; the
// area used least recently is given to a buffer new to the board.
TEST_F(BoardLaneTest, EachKeptBufferKeepsItsDescription) {
  alignas(64) static char buffers[kKeptDescriptions + 1][64];
  auto buffer = [&](int i) { return LaneBuffer{buffers[i], buffers[i], sizeof buffers[i]}; };
  uint64_t op = 0, k = 0;
  auto describe = [&](int i) {  // both members post a description of buffer i; the op ran
    describe_on_both("desc-" + std::to_string(i), ++op, buffer(i), buffer(i));
  };
  auto read_after_run = [&](int i) {  // an op on buffer i, agreed; its description as b reads it
    const bool run_a = described_run(++k, buffer(i));
    size_t bytes = 0;
    const char* desc = b().description(0, &bytes);
    return run_a ? std::string(desc, bytes) : std::string("(described again)");
  };
  for (int i = 0; i < 3; ++i) describe(i);
  EXPECT_EQ("desc-1", read_after_run(1));
  EXPECT_EQ("desc-0", read_after_run(0));
  ++op;
  for (auto& board : boards_) {
    board->post_description("fused", op, LaneBuffer());  // no buffer of its own
    board->forget_described();
  }
  EXPECT_EQ("desc-2", read_after_run(2));
  EXPECT_TRUE(a().holds_description("desc-2"));
  EXPECT_EQ("(described again)", read_after_run(kKeptDescriptions));  // never described
  for (int i = 3; i < kKeptDescriptions; ++i) describe(i);            // every area taken
  EXPECT_EQ("desc-0", read_after_run(0));
  // Every area was used lately: a new buffer takes the area of the last new one (buffer
  // kKeptDescriptions - 1's), and buffer 1's, the least recently used, stays (lru_slots.h).
  describe(kKeptDescriptions);
  EXPECT_EQ("desc-" + std::to_string(kKeptDescriptions), read_after_run(kKeptDescriptions));
  EXPECT_EQ("(described again)", read_after_run(kKeptDescriptions - 1));
  EXPECT_EQ("desc-1", read_after_run(1));
  EXPECT_EQ("desc-0", read_after_run(0));
  // A description posted again, whose op failed, names nothing; the others still hold.
  ++op;
  for (auto& board : boards_) {
    board->post_description("desc-0, changed", op, buffer(0));
    board->forget_described();
  }
  EXPECT_EQ("(described again)", read_after_run(0));
  EXPECT_EQ("desc-2", read_after_run(2));
  // Where a member staged, the next op of more than a window is cut into windows: no area names
  // buffers larger than that; with 0, none names anything.
  for (auto& board : boards_) board->forget_every_described(sizeof buffers[0]);
  EXPECT_EQ("desc-2", read_after_run(2));
  for (auto& board : boards_) board->forget_every_described(sizeof buffers[0] - 1);
  EXPECT_EQ("(described again)", read_after_run(2));
  EXPECT_EQ("(described again)", read_after_run(3));
}

// A kept area names the buffers it was given for, the output among them: the same input reduced
// into another output (or in place after out of place) is another buffer, whose description lies
// elsewhere. An op that says it ran on other buffers than it posted (a kept area is found by the
// buffers posted) leaves its area naming nothing, and the other areas as they were.
TEST_F(BoardLaneTest, AKeptAreaNamesOnlyTheBuffersItWasGivenFor) {
  alignas(64) static char in[64], out[64], other[64];
  const LaneBuffer out_of_place{in, out, sizeof in}, in_place{in, in, sizeof in};
  const LaneBuffer elsewhere{other, other, sizeof other};
  describe_on_both("in->out", 1, out_of_place, out_of_place);
  EXPECT_FALSE(described_run(1, in_place));
  EXPECT_TRUE(described_run(2, out_of_place));
  size_t bytes = 0;
  const char* desc = b().description(0, &bytes);
  EXPECT_EQ("in->out", std::string(desc, bytes));
  describe_on_both("in->in", 2, in_place, elsewhere);
  EXPECT_FALSE(described_run(3, in_place));
  EXPECT_FALSE(described_run(4, elsewhere));
  EXPECT_TRUE(described_run(5, out_of_place));
}

TEST_F(BoardLaneTest, LongSignatureDoesNotFit) {
  EXPECT_FALSE(a().lane_post(1, std::string(4096, 'n'), {}));
  EXPECT_TRUE(a().lane_post(1, std::string(400, 'n'), {}));
}

}  // namespace
}  // namespace hvdc::ops::cpu::local
