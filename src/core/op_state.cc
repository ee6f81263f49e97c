#include "core/op_state.h"

#include <sched.h>

#include <chrono>

namespace hvdc::core {

void OpState::complete(const common::Status& status) {
  if (done_.load(std::memory_order_acquire)) return;
  // The callback runs before waiters wake, so that whatever it does is visible once
  // hvd_wait returns.
  if (hook_) hook_(status);
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
  // sleep and wake-up. It yields each time round: on a machine with as many busy threads as
  // cores, a plain spin would keep the engine threads that complete the op off the CPU.
  if (done()) return result();  // hvd_wait drove it to the end: no clock to read
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_micros);
  while (!done() && std::chrono::steady_clock::now() < until) sched_yield();
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return done_.load(std::memory_order_relaxed); });
  return status_;
}

void* OpState::allocate_output(int32_t dtype, std::vector<int64_t> shape, hvd_device_t device,
                               size_t bytes) {
  output_shape_ = std::move(shape);
  output_.dtype = dtype;
  output_.ndim = static_cast<int32_t>(output_shape_.size());
  output_.shape = output_shape_.data();
  output_.device = device;
  output_.data = nullptr;
  if (alloc_ != nullptr) {
    output_.data = alloc_(alloc_user_data_, &output_, bytes);
  } else {
    owned_output_.reset(new char[bytes > 0 ? bytes : 1]);
    output_.data = owned_output_.get();
  }
  has_output_ = output_.data != nullptr || bytes == 0;
  return output_.data;
}

bool OpState::output(hvd_tensor_t* out) const {
  if (!done() || !has_output_) return false;
  *out = output_;
  return true;
}

common::Status OpState::result() const {
  // complete() writes the status before it stores done_ (release): once done() has seen it
  // (acquire), the status is there to read without the lock.
  if (done()) return status_;
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

}  // namespace hvdc::core
