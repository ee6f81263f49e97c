// StallInspector: which ranks a stalled tensor waits on, when it is reported, and when it expires.
// Time is faked (time points counted from the clock's epoch), so the tests never sleep.
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "core/stall_inspector.h"

namespace {

using hvdc::core::StallInspector;
using Clock = StallInspector::Clock;

Clock::time_point at(double seconds) {
  return Clock::time_point{} +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

Clock::duration secs(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The lines after "Missing ranks:"; fails the test if that line is absent.
std::vector<std::string> missing_lines(const std::string& warning) {
  std::istringstream in(warning);
  std::vector<std::string> lines;
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (found) lines.push_back(line);
    if (line == "Missing ranks:") found = true;
  }
  EXPECT_TRUE(found) << warning;
  return lines;
}

using Lines = std::vector<std::string>;

TEST(StallInspector, WarnsOnlyAfterTheCheckTime) {
  StallInspector inspector(3, 5, 0);
  inspector.submitted("x", 0, at(0));
  inspector.submitted("x", 2, at(0.5));
  EXPECT_TRUE(inspector.check(at(0)).warning.empty());
  EXPECT_TRUE(inspector.check(at(4.9)).warning.empty());
  const StallInspector::Report report = inspector.check(at(6));
  EXPECT_TRUE(report.expired.empty());
  ASSERT_FALSE(report.warning.empty());
  EXPECT_EQ(missing_lines(report.warning), Lines({"1: [x]"}));
  EXPECT_NE(report.warning.find("5 seconds"), std::string::npos) << report.warning;
  EXPECT_NE(report.warning.find("subset of the ranks"), std::string::npos) << report.warning;
  EXPECT_NE(report.warning.find("HVD_ERR_TIMEOUT"), std::string::npos) << report.warning;
}

TEST(StallInspector, ListsEveryMissingRankWithNamesOldestFirst) {
  StallInspector inspector(4, 5, 0);
  inspector.submitted("b", 0, at(0));
  inspector.submitted("a", 0, at(1));
  inspector.submitted("a", 1, at(1));
  inspector.submitted("c", 3, at(2));
  const std::string warning = inspector.check(at(10)).warning;
  EXPECT_EQ(missing_lines(warning), Lines({"0: [c]", "1: [b, c]", "2: [b, a, c]", "3: [b, a]"}));
}

TEST(StallInspector, WarnsAtMostOncePerCheckPeriod) {
  StallInspector inspector(2, 5, 0);
  inspector.submitted("x", 0, at(0));
  EXPECT_FALSE(inspector.check(at(6)).warning.empty());
  EXPECT_TRUE(inspector.check(at(7)).warning.empty());
  EXPECT_TRUE(inspector.check(at(10.9)).warning.empty());
  EXPECT_FALSE(inspector.check(at(11)).warning.empty());
}

TEST(StallInspector, CompletedNamesDisappear) {
  StallInspector inspector(2, 5, 0);
  inspector.submitted("x", 0, at(0));
  inspector.submitted("y", 1, at(0));
  EXPECT_EQ(inspector.pending(), 2u);
  inspector.completed("x");
  const std::string warning = inspector.check(at(6)).warning;
  EXPECT_EQ(missing_lines(warning), Lines({"0: [y]"}));
  inspector.completed("y");
  EXPECT_EQ(inspector.pending(), 0u);
  EXPECT_TRUE(inspector.check(at(20)).warning.empty());
  inspector.completed("never-submitted");  // harmless
}

TEST(StallInspector, TensorsReadyEverywhereAreNotReported) {
  StallInspector inspector(2, 5, 0);
  inspector.submitted("x", 0, at(0));
  inspector.submitted("x", 1, at(1));
  inspector.submitted("x", 1, at(2));  // a repeated report changes nothing
  EXPECT_TRUE(inspector.check(at(60)).warning.empty());
}

TEST(StallInspector, IgnoresRanksOutsideTheSet) {
  StallInspector inspector(2, 5, 0);
  inspector.submitted("x", -1, at(0));
  inspector.submitted("x", 2, at(0));
  EXPECT_EQ(inspector.pending(), 0u);
}

TEST(StallInspector, ExpiredNamesAreReturnedOnceAfterTheShutdownTime) {
  StallInspector inspector(2, 5, 10);
  inspector.submitted("x", 0, at(0));
  inspector.submitted("y", 0, at(3));
  StallInspector::Report report = inspector.check(at(6));
  EXPECT_TRUE(report.expired.empty());
  EXPECT_EQ(missing_lines(report.warning), Lines({"1: [x]"}));
  EXPECT_TRUE(inspector.check(at(9.9)).expired.empty());
  // Expiry ignores the warning rate limit: a warning went out at 6, yet x expires at 10.
  report = inspector.check(at(10));
  EXPECT_EQ(report.expired, Lines({"x"}));
  EXPECT_EQ(missing_lines(report.warning), Lines({"1: [x!, y]"}));
  EXPECT_TRUE(inspector.check(at(10.1)).expired.empty());
  report = inspector.check(at(13));
  EXPECT_EQ(report.expired, Lines({"y"}));
  EXPECT_EQ(missing_lines(report.warning), Lines({"1: [x!, y!]"}));
  inspector.completed("x");
  inspector.completed("y");
  EXPECT_TRUE(inspector.check(at(100)).expired.empty());
}

TEST(StallInspector, WithoutShutdownTimeNothingExpires) {
  StallInspector inspector(2, 5, 0);
  inspector.submitted("x", 0, at(0));
  EXPECT_TRUE(inspector.check(at(1e6)).expired.empty());
  EXPECT_TRUE(inspector.check(at(2e6)).expired.empty());
}

TEST(StallInspector, DisabledInspectorReturnsNothing) {
  for (double check_seconds : {0.0, -1.0}) {
    StallInspector inspector(2, check_seconds, 10);
    EXPECT_FALSE(inspector.enabled());
    inspector.submitted("x", 0, at(0));
    EXPECT_EQ(inspector.pending(), 0u);
    const StallInspector::Report report = inspector.check(at(1000));
    EXPECT_TRUE(report.warning.empty());
    EXPECT_TRUE(report.expired.empty());
    EXPECT_EQ(inspector.time_to_next_check(at(1000)), std::chrono::hours(1));
  }
}

TEST(StallInspector, TruncatesLongNameListsPerRank) {
  StallInspector inspector(2, 5, 0);
  for (int i = 0; i < 8; ++i) inspector.submitted("t" + std::to_string(i), 0, at(i * 0.1));
  EXPECT_EQ(missing_lines(inspector.check(at(10)).warning),
            Lines({"1: [t0, t1, t2, t3, t4, t5, ...]"}));
}

TEST(StallInspector, SixNamesAreNotTruncated) {
  StallInspector inspector(2, 5, 0);
  for (int i = 0; i < 6; ++i) inspector.submitted("t" + std::to_string(i), 1, at(i * 0.1));
  EXPECT_EQ(missing_lines(inspector.check(at(10)).warning), Lines({"0: [t0, t1, t2, t3, t4, t5]"}));
}

TEST(StallInspector, ShutdownNotAfterCheckTimeIsKeptWithANoteOnce) {
  StallInspector inspector(2, 10, 5);
  inspector.submitted("x", 0, at(0));
  StallInspector::Report report = inspector.check(at(5));
  EXPECT_EQ(report.expired, Lines({"x"}));
  EXPECT_EQ(missing_lines(report.warning), Lines({"1: [x!]"}));
  EXPECT_NE(report.warning.find("Note:"), std::string::npos) << report.warning;
  inspector.completed("x");
  inspector.submitted("y", 1, at(6));
  report = inspector.check(at(11));
  EXPECT_EQ(report.expired, Lines({"y"}));
  EXPECT_EQ(missing_lines(report.warning), Lines({"0: [y!]"}));
  EXPECT_EQ(report.warning.find("Note:"), std::string::npos) << report.warning;
}

TEST(StallInspector, TimeToNextCheckFollowsTheDeadlines) {
  StallInspector inspector(2, 5, 20);
  EXPECT_EQ(inspector.time_to_next_check(at(0)), std::chrono::hours(1));  // idle
  inspector.submitted("x", 0, at(0));
  EXPECT_EQ(inspector.time_to_next_check(at(1)), secs(4));
  EXPECT_EQ(inspector.time_to_next_check(at(6)), Clock::duration::zero());
  EXPECT_FALSE(inspector.check(at(6)).warning.empty());
  EXPECT_EQ(inspector.time_to_next_check(at(6)), secs(5));  // the rate limit
  EXPECT_FALSE(inspector.check(at(11)).warning.empty());
  EXPECT_FALSE(inspector.check(at(16)).warning.empty());
  EXPECT_EQ(inspector.time_to_next_check(at(16)), secs(4));  // x expires at 20
  inspector.completed("x");
  EXPECT_TRUE(inspector.check(at(20)).expired.empty());
  EXPECT_EQ(inspector.time_to_next_check(at(20)), std::chrono::hours(1));
}

}  // namespace
