// Hang reports (hang_reports.h): requested from any thread, written by the engine thread.
#include "core/faults/hang_reports.h"

#include "common/log.h"
#include "hvdc.h"

namespace hvdc::core {

void HangReports::request() noexcept {
  requested_.store(true, std::memory_order_release);
  wake_();
}

common::Status HangReports::wait_for_report(int timeout_ms, std::string* text) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t before = generation_;
  request();
  if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                    [&] { return generation_ != before; })) {
    return common::make_error(HVD_ERR_TIMEOUT,
                              "the engine thread did not answer within %d ms (it may be blocked "
                              "outside hvdc, e.g. in a completion callback)",
                              timeout_ms);
  }
  *text = last_;
  return common::Status::ok();
}

bool HangReports::poll(const Describe& describe) {
  if (!requested_.exchange(false, std::memory_order_acq_rel)) return false;
  write("requested (hvd_dump_pending or SIGUSR1)", describe());
  return true;
}

void HangReports::check_stall(Clock::time_point now, Clock::duration oldest_age,
                              const Describe& describe) {
  if (stall_check_seconds_ <= 0 || now < quiet_until_) return;
  const auto limit = std::chrono::seconds(stall_check_seconds_);
  if (oldest_age < limit) return;
  quiet_until_ = now + limit;
  write(common::strfmt("an op has waited more than %d s (HVDC_STALL_CHECK_TIME)",
                       stall_check_seconds_),
        describe());
}

void HangReports::write(const std::string& why, const std::string& text) {
  // Lines end in '\n'; the log adds its own after the block.
  HVDC_LOG_WARNING("hang report, %s:\n%.*s", why.c_str(), static_cast<int>(text.size() - 1),
                   text.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  last_ = text;
  ++generation_;
  cv_.notify_all();
}

}  // namespace hvdc::core
