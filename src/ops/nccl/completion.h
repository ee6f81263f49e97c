// How a device collective completes. Its stream work ends with the stores of stream-ordered
// callers' words and an event; the pending collective polls that event (never blocking), then
// NCCL's asynchronous error. When the engine's work ends (abort), communicators are aborted so no
// stream waits in NCCL for a peer: at once for a failure, after a grace period for a shutdown
// (collectives in flight may still finish). Work that does not finish even then (a caller's
// stream that never reaches the recorded point) is given up on: the op fails, and its buffers
// are leaked rather than reused.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "ops/backend.h"
#include "ops/nccl/comm_cache.h"
#include "ops/nccl/device_run.h"
#include "ops/nccl/submission.h"

namespace hvdc::ops::nccl {

struct DeviceTimeouts {
  std::chrono::milliseconds shutdown_grace{10000};  // shutdown: until communicators are aborted
  std::chrono::milliseconds give_up{5000};          // after an abort: until work is given up on
};

// The backend's abort state, shared with its pending collectives. Engine thread only.
class AbortState {
 public:
  AbortState(DeviceTimeouts timeouts, std::function<void(const Status&)> abort_comms)
      : timeouts_(timeouts), abort_comms_(std::move(abort_comms)) {}
  // Not ok once the engine's work ended.
  const Status& why() const { return why_; }
  void abort(const Status& why);
  // Aborts the communicators once a shutdown's grace period passed.
  void escalate();
  // True once the communicators were aborted: work that finished since may have been cut short.
  bool comms_aborted() const { return comms_aborted_; }
  // True when work still running may be given up on (communicators aborted long enough ago).
  bool give_up(std::chrono::steady_clock::time_point failed_at) const;

 private:
  DeviceTimeouts timeouts_;
  std::function<void(const Status&)> abort_comms_;
  Status why_;
  std::chrono::steady_clock::time_point since_;
  bool comms_aborted_ = false;
  std::chrono::steady_clock::time_point comms_aborted_at_;
};

class DevicePending : public PendingCollective {
 public:
  DevicePending(DeviceRun run, device::Event done, std::shared_ptr<CommEntry> entry,
                std::vector<std::shared_ptr<DeviceSubmission>> ordered,
                std::shared_ptr<AbortState> abort)
      : run_(std::move(run)),
        done_(done),
        entry_(std::move(entry)),
        ordered_(std::move(ordered)),
        abort_(std::move(abort)) {}
  bool poll(Status* status) override;

 private:
  void release();
  void abandon();

  DeviceRun run_;
  device::Event done_;
  std::shared_ptr<CommEntry> entry_;                        // null on the host path
  std::vector<std::shared_ptr<DeviceSubmission>> ordered_;  // stream-ordered callers
  std::shared_ptr<AbortState> abort_;
  Status error_;  // NCCL's asynchronous error (its communicator is aborted)
  std::chrono::steady_clock::time_point failed_at_;
};

// Queues the stores of stream-ordered callers' words and the completion event on run's stream,
// and makes the pending collective that polls them.
Status complete_on_stream(const CollectiveArgs& op, DeviceRun run, std::shared_ptr<CommEntry> entry,
                          std::shared_ptr<AbortState> abort,
                          std::unique_ptr<PendingCollective>* pending);

}  // namespace hvdc::ops::nccl
