// Ending the engine's work early (see termination.h): the causes this rank watches for, and what
// ending means here and for the peers.
#include "core/faults/termination.h"

#include "common/log.h"

namespace hvdc::core {

using common::make_error;
using transport::make_tag;
using transport::TagKind;

namespace {

bool is_async_error(hvd_status_t code) {
  return code != HVD_ERR_SHUT_DOWN;
}

}  // namespace

void Termination::request_abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (abort_reason_.empty()) abort_reason_ = reason.empty() ? "(no reason given)" : reason;
  }
  abort_requested_.store(true);
}

Status Termination::async_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return async_error_;
}

void Termination::terminate(const Status& cause, bool notify_peers) {
  if (!status_.is_ok()) return;
  status_ = cause;
  if (is_async_error(cause.code())) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (async_error_.is_ok()) async_error_ = cause;
    HVDC_LOG_ERROR("%s", cause.message().c_str());
  }
  if (notify_peers && ctx_.transport != nullptr) send_notice(cause);
  for (TensorEntry& entry : ctx_.queue->close(cause)) {
    entry.state->complete(op_failure(entry, cause));
  }
  ctx_.agreed->clear();
  if (ctx_.on_terminated) ctx_.on_terminated(cause);
}

void Termination::send_notice(const Status& cause) {
  Terminate notice{cause.code(), ctx_.rank, cause.message(), {}};
  for (const auto& [id, set] : ctx_.sets->members()) {
    notice.completed_ops.push_back(id);
    notice.completed_ops.push_back(static_cast<int64_t>(set->op_seq));
  }
  const std::string encoded = encode(notice);
  for (int p = 0; p < ctx_.transport->size(); ++p) {
    if (p == ctx_.rank) continue;
    // Best effort: a peer whose connection failed cannot be told.
    (void)ctx_.transport->send_message(p, make_tag(TagKind::kTerminate, ctx_.rank, 0), encoded);
  }
}

bool Termination::poll() {
  bool busy = poll_causes();
  busy |= finish_peer_shutdown();
  return busy;
}

Status Termination::interrupt(const SetState* executing) {
  poll_causes();
  // op_seq counts the running collective: it can finish if the peer finished it.
  if (peer_shut_down_ && executing != nullptr) {
    auto it = peer_shutdown_ops_.find(executing->info.id);
    if (it != peer_shutdown_ops_.end() && static_cast<int64_t>(executing->op_seq) > it->second) {
      terminate(peer_shutdown_status_, false);
    }
  }
  return status_;
}

bool Termination::poll_causes() {
  bool busy = poll_notices();
  busy |= ctx_.stalls != nullptr && ctx_.stalls->poll();
  busy |= check_peer_connections();
  busy |= handle_abort_request();
  return busy;
}

bool Termination::poll_notices() {
  if (ctx_.transport == nullptr) return false;
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (ctx_.transport->poll_message(make_tag(TagKind::kTerminate, 0, 0), transport::kTagKindMask,
                                      &tag, &bytes)) {
    busy = true;
    take_notice(transport::tag_source(tag), bytes);
  }
  return busy;
}

void Termination::take_notice(int from, const std::string& bytes) {
  Terminate notice;
  Status st = decode(bytes, &notice);
  if (st.is_ok() && notice.code >= 0) {
    st = make_error(HVD_ERR_INTERNAL, "a notice whose code %d is not an error",
                    static_cast<int>(notice.code));
  }
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

// A peer's connection failed (UCX's error callback, from a transfer or a keepalive probe): its
// process died or its host became unreachable. Every op waits for it in the end, since every
// rank takes part in every negotiation round, so the engine's work ends here and now rather than
// when some op next sends to it.
bool Termination::check_peer_connections() {
  if (ctx_.transport == nullptr || !status_.is_ok()) return false;
  Status failed = ctx_.transport->check_peers();
  if (failed.is_ok()) return false;
  terminate(make_error(failed.code(),
                       "rank %d: %s; that process died or its host is "
                       "unreachable",
                       ctx_.rank, failed.message().c_str()),
            true);
  return true;
}

bool Termination::handle_abort_request() {
  if (!abort_requested_.load(std::memory_order_acquire) || !status_.is_ok()) return false;
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reason = abort_reason_;
  }
  terminate(
      make_error(HVD_ERR_ABORTED, "hvd_abort was called on rank %d: %s", ctx_.rank, reason.c_str()),
      true);
  return true;
}

// Pairs of (set id, collectives completed) from a peer's shutdown notice; per shared set, the
// fewest over the peers that shut down.
void Termination::note_peer_completed_ops(const std::vector<int64_t>& pairs) {
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const int32_t id = static_cast<int32_t>(pairs[i]);
    if (ctx_.sets->member(id) == nullptr) continue;
    auto [it, fresh] = peer_shutdown_ops_.try_emplace(id, pairs[i + 1]);
    if (!fresh && pairs[i + 1] < it->second) it->second = pairs[i + 1];
  }
}

bool Termination::finish_peer_shutdown() {
  if (!peer_shut_down_ || !status_.is_ok()) return false;
  for (const auto& [id, completed] : peer_shutdown_ops_) {
    const SetState* set = ctx_.sets->member(id);
    if (set != nullptr && static_cast<int64_t>(set->op_seq) < completed) return false;
  }
  terminate(peer_shutdown_status_, false);
  return true;
}

}  // namespace hvdc::core
