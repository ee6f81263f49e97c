#include "core/op_state.h"

#include <chrono>

namespace hvdc::core {

void OpState::complete(const common::Status& status) {
  if (done_.load(std::memory_order_acquire)) return;
  // The callback runs before waiters wake, so that whatever it does is visible once
  // hvd_wait returns.
  if (on_done_ != nullptr) on_done_(user_data_, handle_, status.code());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = status;
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

common::Status OpState::wait(int spin_micros) {
  // A short spin catches ops that finish within microseconds without paying for a futex
  // sleep and wake-up.
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_micros);
  while (!done() && std::chrono::steady_clock::now() < until) {
  }
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_.load(std::memory_order_relaxed); });
  return status_;
}

common::Status OpState::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

}  // namespace hvdc::core
