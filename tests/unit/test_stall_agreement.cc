// Stall agreement: following the stall reports to the rank(s) a stalled collective waits for in
// the end, and the StallReport wire format (u32 count, then little-endian int64 ranks).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/stall_agreement.h"

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

}  // namespace
