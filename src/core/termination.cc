// Ending the engine's work early: hvd_abort here, a notice that a peer aborted or shut down, or
// a failure of the data path. Every pending op fails with the cause, later submissions fail at
// once, and (when this rank found the cause) every peer is told so no rank waits in vain.
#include "common/log.h"
#include "core/engine.h"

namespace hvdc::core {

using common::make_error;
using transport::make_tag;
using transport::TagKind;

namespace {

bool is_async_error(hvd_status_t code) {
  return code != HVD_ERR_SHUT_DOWN;
}

}  // namespace

void Engine::terminate(const Status& status, bool notify_peers) {
  if (!terminated_.is_ok()) return;
  terminated_ = status;
  if (is_async_error(status.code())) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (async_error_.is_ok()) async_error_ = status;
    HVDC_LOG_ERROR("%s", status.message().c_str());
  }
  if (notify_peers && transport_) {
    Terminate notice{status.code(), topology_.rank, status.message(), {}};
    for (const auto& [id, set] : sets_->members()) {
      notice.completed_ops.push_back(id);
      notice.completed_ops.push_back(static_cast<int64_t>(set->op_seq));
    }
    const std::string encoded = encode(notice);
    for (int p = 0; p < topology_.size; ++p) {
      if (p == topology_.rank) continue;
      // Best effort: a peer whose connection failed cannot be told.
      (void)transport_->send_message(p, make_tag(TagKind::kTerminate, topology_.rank, 0), encoded);
    }
  }
  for (TensorEntry& entry : queue_.close(status)) entry.state->complete(op_failure(entry, status));
  responses_.clear();
  // Device collectives in flight must finish in bounded time (an NCCL communicator waits for
  // peers that may be gone): the backends abort them.
  if (stage_) stage_->abort(status);
}

// A peer's connection failed (UCX's error callback, from a transfer or a keepalive probe): its
// process died or its host became unreachable. Every op waits for it in the end, since every
// rank takes part in every negotiation round, so the engine's work ends here and now rather than
// when some op next sends to it.
bool Engine::check_peer_connections() {
  if (!transport_ || !terminated_.is_ok()) return false;
  Status failed = transport_->check_peers();
  if (failed.is_ok()) return false;
  terminate(common::make_error(failed.code(),
                               "rank %d: %s; that process died or its host is "
                               "unreachable",
                               topology_.rank, failed.message().c_str()),
            true);
  return true;
}

bool Engine::poll_terminate() {
  if (!transport_) return false;
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (transport_->poll_message(make_tag(TagKind::kTerminate, 0, 0), transport::kTagKindMask,
                                  &tag, &bytes)) {
    busy = true;
    Terminate notice;
    Status st = decode(bytes, &notice);
    if (st.is_ok() && notice.code >= 0) {
      st = common::make_error(HVD_ERR_INTERNAL, "a notice whose code %d is not an error",
                              static_cast<int>(notice.code));
    }
    const int from = transport::tag_source(tag);
    if (!st.is_ok()) {
      terminate(st.with_context(common::strfmt("notice from rank %d", from)), false);
    } else if (notice.code == HVD_ERR_SHUT_DOWN) {
      // A rank that shut down completed its collectives first; those still running here can
      // finish with the data it already sent. Give up on it only after them.
      note_peer_completed_ops(notice.completed_ops);
      if (!peer_shut_down_) {
        peer_shut_down_ = true;
        peer_shutdown_status_ = make_error(
            HVD_ERR_SHUT_DOWN, "rank %d has shut down (%s); no collective can complete without it",
            from, notice.reason.c_str());
      }
    } else {
      // The notice carries the originating rank's own message, which names it and the cause.
      terminate(Status(notice.code, notice.reason), false);
    }
  }
  return busy;
}

bool Engine::handle_abort_request() {
  if (!abort_requested_.load(std::memory_order_acquire) || !terminated_.is_ok()) return false;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reason = abort_reason_;
  }
  terminate(make_error(HVD_ERR_ABORTED, "hvd_abort was called on rank %d: %s", topology_.rank,
                       reason.c_str()),
            true);
  return true;
}

// Pairs of (set id, collectives completed) from a peer's shutdown notice; per shared set, the
// fewest over the peers that shut down.
void Engine::note_peer_completed_ops(const std::vector<int64_t>& pairs) {
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const int32_t id = static_cast<int32_t>(pairs[i]);
    if (sets_->member(id) == nullptr) continue;
    auto [it, fresh] = peer_shutdown_ops_.try_emplace(id, pairs[i + 1]);
    if (!fresh && pairs[i + 1] < it->second) it->second = pairs[i + 1];
  }
}

// Ends the engine's work once it has run every collective a peer that shut down completed.
bool Engine::finish_peer_shutdown() {
  if (!peer_shut_down_ || !terminated_.is_ok()) return false;
  for (const auto& [id, completed] : peer_shutdown_ops_) {
    const SetState* set = sets_->member(id);
    if (set != nullptr && static_cast<int64_t>(set->op_seq) < completed) return false;
  }
  terminate(peer_shutdown_status_, false);
  return true;
}

Status Engine::interrupt_check() {
  // A hang report is most wanted while a collective waits.
  hang_reports_.poll([this] { return describe_pending(); });
  poll_terminate();
  if (stalls_) stalls_->poll();
  check_peer_connections();
  handle_abort_request();
  // op_seq counts the running collective: it can finish if the peer finished it.
  const SetState* executing = stage_ ? stage_->starting() : nullptr;
  if (peer_shut_down_ && executing != nullptr) {
    auto it = peer_shutdown_ops_.find(executing->info.id);
    if (it != peer_shutdown_ops_.end() && static_cast<int64_t>(executing->op_seq) > it->second) {
      terminate(peer_shutdown_status_, false);
    }
  }
  return terminated_;
}

}  // namespace hvdc::core
