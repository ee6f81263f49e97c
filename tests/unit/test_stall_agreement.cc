// Stall agreement: following the stall reports to the rank(s) a stalled collective waits for in
// the end, the exchange of reports between ranks (StallAgreement), and the StallReport wire
// format (u32 count, then little-endian int64 ranks).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/faults/stall_agreement.h"
#include "core/message.h"
#include "fake_transport.h"

namespace {

using hvdc::core::decode;
using hvdc::core::encode;
using hvdc::core::stall_culprits;
using hvdc::core::StallReport;
using Reports = std::map<int, std::vector<int>>;

TEST(StallCulprits, ARankThatDidNotReportIsTheCulprit) {
  EXPECT_EQ(stall_culprits(0, Reports{{0, {1}}}), (std::vector<int>{1}));
  EXPECT_EQ(stall_culprits(0, Reports{{0, {1, 3}}}), (std::vector<int>{1, 3}));
}

TEST(StallCulprits, FollowsTheWaitsThroughRanksThatReported) {
  // Ring of 4, rank 1 stopped: 0 waits for 3, 3 for 2, 2 for 1.
  const Reports ring{{0, {3}}, {3, {2}}, {2, {1}}};
  EXPECT_EQ(stall_culprits(0, ring), (std::vector<int>{1}));
  EXPECT_EQ(stall_culprits(3, ring), (std::vector<int>{1}));
  // Rank 0 also waits to send to the stopped rank directly.
  EXPECT_EQ(stall_culprits(0, Reports{{0, {1, 2}}, {2, {1}}}), (std::vector<int>{1}));
}

TEST(StallCulprits, ARankWaitingForNobodyIsTheCulprit) {
  // Rank 2 answered from outside any collective: it is not taking part.
  EXPECT_EQ(stall_culprits(0, Reports{{0, {2}}, {2, {}}}), (std::vector<int>{2}));
}

TEST(StallCulprits, ACycleOfWaitsHasNoCulprit) {
  EXPECT_TRUE(stall_culprits(0, Reports{{0, {1}}, {1, {2}}, {2, {0}}}).empty());
  EXPECT_TRUE(stall_culprits(0, Reports{{0, {1}}, {1, {0}}}).empty());
}

TEST(StallCulprits, ReportsOffThePathDoNotMatter) {
  // Rank 5 waits for rank 4 elsewhere; rank 0's waits do not lead there.
  EXPECT_EQ(stall_culprits(0, Reports{{0, {1}}, {5, {4}}}), (std::vector<int>{1}));
  EXPECT_TRUE(stall_culprits(0, Reports{{5, {4}}}).empty());  // no waits of its own
}

std::string le_bytes(uint64_t v, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

TEST(StallReportWire, LayoutAndRoundTrip) {
  const StallReport report{{1, 300}};
  const std::string expected = le_bytes(2, 4) + le_bytes(1, 8) + le_bytes(300, 8);
  EXPECT_EQ(encode(report), expected);
  StallReport out;
  ASSERT_TRUE(decode(expected, &out).is_ok());
  EXPECT_EQ(out.waiting_for, report.waiting_for);
  ASSERT_TRUE(decode(encode(StallReport{}), &out).is_ok());
  EXPECT_TRUE(out.waiting_for.empty());
}

TEST(StallReportWire, MalformedInputIsAnError) {
  const std::string bytes = encode(StallReport{{2, 3}});
  for (size_t len = 0; len < bytes.size(); ++len) {
    StallReport out;
    EXPECT_FALSE(decode(bytes.substr(0, len), &out).is_ok()) << len;
  }
  StallReport out;
  EXPECT_FALSE(decode(bytes + "x", &out).is_ok());
  const hvdc::common::Status st = decode(le_bytes(0xFFFFFFFFu, 4), &out);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("stall report"), std::string::npos) << st.message();
}

// Rank 0 times out waiting for rank 2, which waits for rank 1, which stopped and never answers:
// rank 0 names rank 1, not its neighbour. Rank 3, not in the collective, waits for nobody.
TEST(StallAgreement, TimedOutRanksNameTheRankThatStopped) {
  auto net = std::make_shared<hvdc_test::FakeNetwork>(4);
  std::vector<std::unique_ptr<hvdc_test::FakeTransport>> t;
  for (int r = 0; r < 4; ++r) t.push_back(std::make_unique<hvdc_test::FakeTransport>(net, r));
  hvdc::core::StallAgreement rank0(t[0].get(), 1), rank2(t[2].get(), 1), rank3(t[3].get(), 1);
  t[0]->waited = {2};
  t[2]->waited = {1};
  const hvdc::common::Status timeout(HVD_ERR_TIMEOUT, "allreduce timed out");
  int polls = 0;
  // Rank 0 concludes while the others answer from their loops (its interrupt runs them).
  auto others = [&] {
    ++polls;
    rank2.poll();
    rank3.poll();
    return hvdc::common::Status::ok();
  };
  const hvdc::common::Status st = rank0.agree(timeout, others);
  EXPECT_GT(polls, 0);
  EXPECT_EQ(st.code(), HVD_ERR_TIMEOUT);
  EXPECT_NE(st.message().find("allreduce timed out; "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("ranks 2, 3 reported waiting too; the waits lead to rank 1, which"),
            std::string::npos)
      << st.message();
}

TEST(StallAgreement, InterruptEndsTheGracePeriodWithItsStatus) {
  auto net = std::make_shared<hvdc_test::FakeNetwork>(2);
  hvdc_test::FakeTransport transport(net, 0);
  transport.waited = {1};
  hvdc::core::StallAgreement agreement(&transport, 60);
  const hvdc::common::Status aborted(HVD_ERR_ABORTED, "rank 1 aborted");
  const hvdc::common::Status st =
      agreement.agree(hvdc::common::Status(HVD_ERR_TIMEOUT, "timed out"), [&] { return aborted; });
  EXPECT_EQ(st.code(), HVD_ERR_ABORTED);
  ASSERT_EQ(net->inbox[1].size(), 1u);  // its report went out first
}

// Waiting for nobody: nothing to agree on, nothing sent.
TEST(StallAgreement, NoWaitedPeersKeepsTheTimeout) {
  auto net = std::make_shared<hvdc_test::FakeNetwork>(2);
  hvdc_test::FakeTransport transport(net, 0);
  hvdc::core::StallAgreement agreement(&transport, 60);
  const hvdc::common::Status st =
      agreement.agree(hvdc::common::Status(HVD_ERR_TIMEOUT, "timed out"),
                      [] { return hvdc::common::Status::ok(); });
  EXPECT_EQ(st.message(), "timed out");
  EXPECT_TRUE(net->inbox[1].empty());
}

}  // namespace
