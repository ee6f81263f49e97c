// Submitted tensors waiting for negotiation and execution. API threads push; the engine thread
// pops new requests to report, and takes entries out when their response arrives. Names in
// flight are unique per process set: a second push of the same name to a set fails at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/message.h"
#include "core/op_state.h"

namespace hvdc::ops {
struct DeviceSubmission;  // ops/nccl/submission.h
}

namespace hvdc::core {

struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;
  std::shared_ptr<OpState> state;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank (empty: equal split)
  // CUDA tensors: the caller's stream and whether later work on it must see the result without
  // a host wait (HVD_OP_STREAM_ORDERED). This rank's own business, so not in the request.
  void* cuda_stream = nullptr;
  bool stream_ordered = false;
  // CUDA tensors: what the API recorded on cuda_stream at submission
  // (ops::nccl::record_submission); dropping it releases a stream-ordered caller's stream.
  std::shared_ptr<ops::DeviceSubmission> submission;
  std::chrono::steady_clock::time_point submitted;  // set by the push
};

// `status` for one op the engine gives up on: names the op, its set and how long it was in flight
// ("allreduce 'grad.3' (process set 0) failed after 1.20 s: <status's message>").
common::Status op_failure(const TensorEntry& entry, const common::Status& status);

// An op's input and output as the caller gave them (null: not known, or none given).
struct OpBuffers {
  const void* input = nullptr;
  const void* output = nullptr;
};

// A copy of what an op in flight is, for diagnostics.
struct PendingOp {
  Request request;
  std::chrono::steady_clock::time_point submitted;
  bool reported = false;  // popped by the engine (pop_new) for negotiation
};

class TensorQueue {
 public:
  TensorQueue();
  ~TensorQueue();
  TensorQueue(const TensorQueue&) = delete;
  TensorQueue& operator=(const TensorQueue&) = delete;

  // Fails with HVD_ERR_DUPLICATE_NAME, or with the closing status once close() was called.
  // `submitted` is when the op was submitted: a caller that reads the clock anyway passes its
  // reading, which costs a small op about 1 % of its time on a VM.
  Status push(TensorEntry&& entry,
              std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now());
  // Pushes all entries or none (a grouped submission), all submitted at `submitted`.
  Status push_group(
      std::vector<TensorEntry> entries,
      std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now());
  // Requests pushed since the last call, in push order: the first N of *out, N returned. The
  // elements past them are left as they were, so that a caller keeping *out between calls
  // reuses their storage (a warm step's pass copies its requests without allocating).
  // With `buffers`, its first N elements are each op's input and output, looked up with the
  // request: what the lane posts (core/lane/lane.h).
  size_t pop_new(std::vector<Request>* out, std::vector<OpBuffers>* buffers = nullptr);
  // A copy of the request of `name` in `process_set`; false if it is not in flight.
  bool request_of(int32_t process_set, const std::string& name, Request* out) const;
  // The input buffer of `name` in `process_set`; null if it is not in flight.
  const void* input_of(int32_t process_set, const std::string& name) const;
  // Removes and returns the entry of `name` in `process_set`; false if it is not in flight.
  bool take(int32_t process_set, const std::string& name, TensorEntry* out);
  // Removes and returns every entry of a process set.
  std::vector<TensorEntry> take_set(int32_t process_set);
  // Rejects later pushes with `status` and returns every entry still in flight.
  std::vector<TensorEntry> close(const common::Status& status);
  // Readable when the engine thread should look (an eventfd); the engine sleeps on it.
  int wake_fd() const { return wake_fd_; }
  // Any thread, a signal handler too: makes wake_fd readable.
  void wake();
  // Engine thread, around its sleep. Pushes write to wake_fd only while the engine sleeps, so
  // that an engine that is awake costs them no system call: false if requests are waiting to be
  // popped (sleep not), else from now on pushes wake it.
  bool begin_sleep();
  // After the sleep: pushes stop writing, and wake_fd is drained.
  void end_sleep();
  // Ops pushed and not yet taken, read without the lock: a push on another thread may show a
  // moment after it returns, which callers already allow for (it could come just after the call).
  size_t in_flight() const;
  // Every op in flight, oldest first.
  std::vector<PendingOp> snapshot() const;
  // When the oldest op in flight was pushed; false if none is.
  bool oldest_submitted(std::chrono::steady_clock::time_point* out) const;

 private:
  using Key = std::pair<int32_t, std::string>;  // process set, name
  struct KeyHash {
    size_t operator()(const Key& key) const {
      return std::hash<std::string>()(key.second) ^ static_cast<size_t>(key.first);
    }
  };
  static Status duplicate(const Key& key);
  // The key of (process_set, name), written into probe_: a lookup copies the name into storage
  // kept from the last one, so that it allocates nothing (names past 15 bytes live on the heap).
  const Key& probe_locked(int32_t process_set, const std::string& name) const;
  // The key of a request to push, written where the push keeps it: the spare node's key if
  // there is a spare node, else probe_ (insert_locked() copies it into a new node).
  const Key& key_for_push_locked(const Request& request);
  Status check_push_locked(const Key& key) const;  // closed, or name in flight
  // `key` is key_for_push_locked()'s for this entry.
  void insert_locked(const Key& key, TensorEntry&& entry,
                     std::chrono::steady_clock::time_point submitted);
  void wake_if_sleeping();  // after a push

  mutable std::mutex mutex_;
  using Entries = std::unordered_map<Key, TensorEntry, KeyHash>;
  Entries entries_;
  // The node of the entry taken last, reused by the next push: a loop of ops then allocates
  // and frees no node per op.
  Entries::node_type spare_node_;
  mutable Key probe_;
  // The keys pushed since the last pop_new(), in push order: the first fresh_count_ of fresh_.
  // The elements past them are kept for their storage, which the next pushes write into.
  std::vector<Key> fresh_;
  size_t fresh_count_ = 0;
  bool closed_ = false;
  common::Status close_status_;
  int wake_fd_ = -1;
  // A Dekker pair (sequentially consistent): a push stores fresh_waiting_ and then reads
  // sleeping_; the engine stores sleeping_ and then reads fresh_waiting_. At least one of them
  // sees the other's store, so a push never leaves the engine asleep with a request waiting.
  std::atomic<bool> fresh_waiting_{false};  // fresh_count_ > 0 (written under mutex_)
  std::atomic<bool> sleeping_{false};
  std::atomic<size_t> in_flight_{0};  // entries_.size(), stored under mutex_
};

}  // namespace hvdc::core
