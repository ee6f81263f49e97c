// Hang reports: a text of every op in flight on this rank, written as one block in the log on
// request (hvd_dump_pending, SIGUSR1) and when an op has waited past the stall check time here.
// Any thread may ask for one; the engine thread writes it, since only it may read its state.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "common/status.h"

namespace hvdc::core {

class HangReports {
 public:
  using Clock = std::chrono::steady_clock;
  // Writes the report's text (lines ending in '\n'); engine thread.
  using Describe = std::function<std::string()>;

  // stall_check_seconds: HVDC_STALL_CHECK_TIME (0: no reports on stalls). wake: wakes the engine
  // thread; it must be safe in a signal handler.
  HangReports(int stall_check_seconds, std::function<void()> wake)
      : stall_check_seconds_(stall_check_seconds), wake_(std::move(wake)) {}

  // Any thread: asks the engine thread for a report. Only an atomic store and wake(), so a
  // signal handler may call it.
  void request() noexcept;
  // Any thread but the engine's: requests a report and waits up to timeout_ms for it.
  common::Status wait_for_report(int timeout_ms, std::string* text);
  // Engine thread: writes the report asked for, if any; true if it did.
  bool poll(const Describe& describe);
  // Engine thread: a report once the oldest op in flight is older than the stall check time, at
  // most one per period, so every rank's view of a hang is in its log.
  void check_stall(Clock::time_point now, Clock::duration oldest_age, const Describe& describe);

 private:
  void write(const std::string& why, const std::string& text);

  const int stall_check_seconds_;
  std::function<void()> wake_;
  std::atomic<bool> requested_{false};
  Clock::time_point quiet_until_;  // engine thread
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;  // guarded by mutex_, like last_
  std::string last_;
};

}  // namespace hvdc::core
