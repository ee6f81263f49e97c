// Hang reports (core/faults/hang_reports.h): asked for from any thread, written by the engine
// thread, and written on a stall at most once per check period.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/faults/hang_reports.h"
#include "hvdc.h"

namespace {

using hvdc::core::HangReports;
using Clock = std::chrono::steady_clock;

TEST(HangReports, ARequestFromAnotherThreadGetsTheEngineThreadsReport) {
  std::atomic<int> wakes{0};
  HangReports reports(60, [&] { ++wakes; });
  std::atomic<bool> stop{false};
  int described = 0;
  std::thread engine([&] {
    while (!stop.load()) {
      reports.poll([&] {
        ++described;
        return std::string("rank 0: 1 ops in flight\n");
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::string text;
  const hvdc::common::Status st = reports.wait_for_report(10000, &text);
  stop.store(true);
  engine.join();
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(text, "rank 0: 1 ops in flight\n");
  EXPECT_EQ(described, 1);  // one request, one report
  EXPECT_GE(wakes.load(), 1);
}

TEST(HangReports, NoEngineThreadMeansATimeout) {
  HangReports reports(60, [] {});
  std::string text = "unchanged";
  const hvdc::common::Status st = reports.wait_for_report(20, &text);
  EXPECT_EQ(st.code(), HVD_ERR_TIMEOUT);
  EXPECT_NE(st.message().find("20 ms"), std::string::npos) << st.message();
  EXPECT_EQ(text, "unchanged");
}

TEST(HangReports, PollWithoutARequestWritesNothing) {
  HangReports reports(60, [] {});
  EXPECT_FALSE(reports.poll([] { return std::string("x\n"); }));
  reports.request();
  EXPECT_TRUE(reports.poll([] { return std::string("x\n"); }));
  EXPECT_FALSE(reports.poll([] { return std::string("x\n"); }));
}

TEST(HangReports, StallReportsOncePerCheckPeriod) {
  HangReports reports(2, [] {});
  int described = 0;
  auto describe = [&] {
    ++described;
    return std::string("report\n");
  };
  const Clock::time_point t0 = Clock::now();
  reports.check_stall(t0, std::chrono::seconds(1), describe);  // younger than the period
  EXPECT_EQ(described, 0);
  reports.check_stall(t0, std::chrono::seconds(3), describe);
  EXPECT_EQ(described, 1);
  reports.check_stall(t0 + std::chrono::seconds(1), std::chrono::seconds(4), describe);
  EXPECT_EQ(described, 1);  // quiet until t0 + 2 s
  reports.check_stall(t0 + std::chrono::seconds(2), std::chrono::seconds(5), describe);
  EXPECT_EQ(described, 2);
}

TEST(HangReports, ZeroCheckTimeDisablesStallReports) {
  HangReports reports(0, [] {});
  int described = 0;
  reports.check_stall(Clock::now(), std::chrono::hours(1), [&] {
    ++described;
    return std::string("report\n");
  });
  EXPECT_EQ(described, 0);
}

}  // namespace
