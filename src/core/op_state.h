// The completion state of one submitted op, shared by the engine (which completes it) and the
// API threads that test, wait on or free its handle.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "hvdc.h"

namespace hvdc::core {

class OpState {
 public:
  OpState(hvd_done_fn on_done, void* user_data) : on_done_(on_done), user_data_(user_data) {}

  void set_handle(hvd_handle_t handle) { handle_ = handle; }
  // Runs inside complete(), before the callback, with the full status (grouped ops use it).
  void set_completion_hook(std::function<void(const common::Status&)> hook) {
    hook_ = std::move(hook);
  }
  // Runs the completion callback, then records the result and wakes waiters. Called once, by
  // the engine thread.
  void complete(const common::Status& status);
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Whether completing this op runs the user's code (a callback, a grouped completion) or its
  // collective calls the user's output allocator: such ops run on the engine thread.
  bool calls_user_code() const { return on_done_ != nullptr || hook_ || alloc_ != nullptr; }
  // Blocks until done (spinning for spin_micros first); returns the op's status.
  common::Status wait(int spin_micros);
  common::Status result() const;  // valid once done()

  // Outputs sized by negotiation (allgather): from the caller's allocator if it gave one, else
  // owned here until the handle is freed. Engine thread; nullptr if the allocator refused.
  void set_allocator(hvd_alloc_fn fn, void* user_data) {
    alloc_ = fn;
    alloc_user_data_ = user_data;
  }
  void* allocate_output(int32_t dtype, std::vector<int64_t> shape, hvd_device_t device,
                        size_t bytes);
  // The output descriptor once the op succeeded; false if the op has none.
  bool output(hvd_tensor_t* out) const;
  // Alltoall: rows received from each rank (engine thread sets it before completing).
  void set_received_splits(std::vector<int64_t> splits) { received_splits_ = std::move(splits); }
  const std::vector<int64_t>& received_splits() const { return received_splits_; }
  // The op's one-number result (join: the last rank to join; process set creation: the new
  // set's id). The engine thread sets it before completing.
  void set_result_value(int32_t value) { result_value_ = value; }
  int32_t result_value() const { return result_value_; }

 private:
  hvd_done_fn on_done_;
  std::function<void(const common::Status&)> hook_;
  void* user_data_;
  hvd_handle_t handle_ = 0;
  std::atomic<bool> done_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  common::Status status_;
  hvd_alloc_fn alloc_ = nullptr;
  void* alloc_user_data_ = nullptr;
  std::unique_ptr<char[]> owned_output_;  // not zero-filled: the collective writes all of it
  std::vector<int64_t> output_shape_;
  hvd_tensor_t output_ = {};
  bool has_output_ = false;
  std::vector<int64_t> received_splits_;
  int32_t result_value_ = -1;
};

}  // namespace hvdc::core
