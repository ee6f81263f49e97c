// Termination: ending the engine's work early, and watching for the causes. A cause is hvd_abort
// here, a peer's notice that it aborted, failed or shut down, a peer whose connection failed, or
// a failure of the data path (reported through terminate()). The first cause wins: every pending
// op fails with it, later submissions fail at once, and, when this rank found the cause, every
// peer is told, so that no rank waits in vain for another.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/faults/stall_agreement.h"
#include "core/message.h"
#include "core/set_state.h"
#include "core/sets/member_sets.h"
#include "core/tensor_queue.h"
#include "transport/transport.h"

namespace hvdc::core {

// What termination works on, owned by the engine.
struct TerminationContext {
  int rank = 0;
  transport::Transport* transport = nullptr;  // null on a single rank
  MemberSets* sets = nullptr;                 // each set's count of executed collectives
  TensorQueue* queue = nullptr;               // closed with the cause
  std::deque<Response>* agreed = nullptr;     // agreed, not yet executed: dropped with the cause
  StallAgreement* stalls = nullptr;           // polled with the notices; null without a transport
  // Called once, after the pending ops failed with the cause: device collectives in flight must
  // end in bounded time too (an NCCL communicator waits for peers that may be gone), so the
  // engine has the backends abort them. May be empty.
  std::function<void(const Status&)> on_terminated;
};

class Termination {
 public:
  explicit Termination(TerminationContext context) : ctx_(std::move(context)) {}

  // Any thread (hvd_abort): the engine thread ends the work with HVD_ERR_ABORTED at its next
  // poll; the caller wakes it. The first reason given wins.
  void request_abort(const std::string& reason);
  // Any thread: the first asynchronous error (ok if none; a shutdown is not one).
  Status async_error() const;

  // Engine thread, like everything below: ok while the engine's work goes on, then the cause.
  const Status& status() const { return status_; }
  // Ends the work with `cause` unless it has ended already. notify_peers: this rank found the
  // cause, so every peer gets a notice with it and this rank's completed collectives per set.
  void terminate(const Status& cause, bool notify_peers);
  // From the engine loop: peers' notices, stall reports, failed connections, an abort request,
  // and a peer's shutdown once this rank ran what that peer completed. True if anything came.
  bool poll();
  // From inside a collective's waits (`executing`: the set whose collective runs, if any): the
  // same checks, where a peer's shutdown ends the work once the running collective is one the
  // peer did not complete. Returns status().
  Status interrupt(const SetState* executing);
  // Ends the work once this rank ran every collective that the peers which shut down
  // completed; true if it ended it now.
  bool finish_peer_shutdown();

 private:
  bool poll_causes();
  bool poll_notices();
  void take_notice(int from, const std::string& bytes);
  bool check_peer_connections();
  bool handle_abort_request();
  void note_peer_completed_ops(const std::vector<int64_t>& pairs);
  void send_notice(const Status& cause);

  TerminationContext ctx_;
  Status status_;                // non-ok once the work ended
  bool peer_shut_down_ = false;  // a peer's shutdown notice arrived
  // Per set shared with peers that shut down: the fewest collectives one of them completed.
  std::map<int32_t, int64_t> peer_shutdown_ops_;
  Status peer_shutdown_status_;
  std::atomic<bool> abort_requested_{false};

  mutable std::mutex mutex_;  // guards the fields below
  std::string abort_reason_;
  Status async_error_;
};

}  // namespace hvdc::core
