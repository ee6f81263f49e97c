// Submitted tensors waiting for negotiation and execution. API threads push; the engine thread
// pops new requests to report, and takes entries out when their response arrives. Names in
// flight are unique: a second push of the same name fails at once.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/message.h"
#include "core/op_state.h"

namespace hvdc::core {

struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;
  std::shared_ptr<OpState> state;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank (empty: equal split)
};

class TensorQueue {
 public:
  TensorQueue();
  ~TensorQueue();
  TensorQueue(const TensorQueue&) = delete;
  TensorQueue& operator=(const TensorQueue&) = delete;

  // Fails with HVD_ERR_DUPLICATE_NAME, or with the closing status once close() was called.
  Status push(TensorEntry entry);
  // Pushes all entries or none (a grouped submission).
  Status push_group(std::vector<TensorEntry> entries);
  // Requests pushed since the last call, in push order.
  std::vector<Request> pop_new();
  // A copy of the request of `name`; false if it is not in flight.
  bool request_of(const std::string& name, Request* out) const;
  // Removes and returns the entry of `name`; false if it is not in flight.
  bool take(const std::string& name, TensorEntry* out);
  // Rejects later pushes with `status` and returns every entry still in flight.
  std::vector<TensorEntry> close(const common::Status& status);
  // Readable when something was pushed (an eventfd); the engine sleeps on it.
  int wake_fd() const { return wake_fd_; }
  void wake();
  void drain_wake();
  size_t in_flight() const;

 private:
  static Status duplicate(const std::string& name);
  Status check_push_locked(const std::string& name) const;  // closed, or name in flight
  void insert_locked(TensorEntry entry);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, TensorEntry> entries_;
  std::deque<std::string> fresh_;
  bool closed_ = false;
  common::Status close_status_;
  int wake_fd_ = -1;
};

}  // namespace hvdc::core
