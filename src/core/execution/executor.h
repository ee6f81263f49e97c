// The execution stage: turns an agreed response and this rank's entries into a collective for
// the backend of the tensors' device type, and keeps the collectives in flight until their
// backend reports them finished. Every rank starts the same collectives in the same order;
// finished ones come back in that order too.
#pragma once

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "core/message.h"
#include "core/tensor_queue.h"
#include "ops/backend.h"

namespace hvdc::core {

// A collective whose backend finished it (status says how), with the entries it ran on.
struct FinishedOp {
  Response response;
  std::vector<TensorEntry> entries;
  Status status;
};

class Executor {
 public:
  // Backends by device type (HVD_DEVICE_CPU, ...); an op on a device type with none fails.
  explicit Executor(std::map<int32_t, std::unique_ptr<ops::Backend>> backends);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts the collective of `response` over `entries` (this rank's, in the response's name
  // order) among `group`. `joined`: this rank called hvd_join and contributes zeros for the
  // allreduce tensors it lacks. A collective that cannot start, or that finishes at once, is
  // finished here, and comes back from the next poll() all the same.
  void start(Response&& response, std::vector<TensorEntry>&& entries, const ops::Group& group,
             bool joined, std::function<void(const char*, bool)>&& trace);
  // Replaces *finished with the collectives finished since the last call, in start order (a
  // later one that finished waits for the earlier ones). Never blocks. The caller keeps the
  // vector between calls, so that a warm step's poll allocates nothing.
  void poll(std::vector<FinishedOp>* finished);
  bool idle() const { return running_.empty(); }
  // The backend of a device type's tensors; null if there is none.
  ops::Backend* backend(int32_t device_type) const {
    auto it = backends_.find(device_type);
    return it == backends_.end() ? nullptr : it->second.get();
  }
  // Tells every backend that the engine's work ended (ops::Backend::abort).
  void abort(const Status& why);
  // The responses started and not yet returned by poll(), oldest first (for hang reports).
  std::vector<const Response*> running() const;

 private:
  struct Running {
    FinishedOp op;
    std::unique_ptr<ops::PendingCollective> pending;  // null once finished
  };
  Status launch(Running& running, const ops::Group& group, bool joined,
                std::function<void(const char*, bool)>&& trace);
  // What the backend is told of the op, into `op`'s storage.
  Status describe(Running& running, const ops::Group& group, ops::CollectiveArgs* op) const;

  std::map<int32_t, std::unique_ptr<ops::Backend>> backends_;
  std::list<Running> running_;  // oldest first
  std::list<Running> spare_;    // finished ones' nodes, for the next starts
  // The last op's arguments, kept for their storage (a warm op's launch allocates nothing);
  // a launch from inside a backend's start() (none does) would use its own.
  ops::CollectiveArgs args_;
  bool args_in_use_ = false;
};

}  // namespace hvdc::core
