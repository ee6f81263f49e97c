// The UCX transport's failed peers, and the stop of every request after a failed wait.
#include "hvdc_config.h"

#if HVDC_HAVE_UCX
#include <ucp/api/ucp.h>

#include <chrono>
#include <vector>

#include "transport/ucx/ucx_transport_impl.h"

namespace hvdc::transport::ucx {

using common::make_error;

Status UcxTransport::peer_failure(int peer) const {
  return make_error(HVD_ERR_PEER_FAILURE, "connection to rank %d failed: %s", peer,
                    ucs_status_string(peer_status_[peer]));
}

void UcxTransport::mark_peer_failed(int peer, ucs_status_t status) {
  peer_status_[peer] = status;
  if (first_failed_peer_ < 0) first_failed_peer_ = peer;
}

Status UcxTransport::check_usable(int peer) const {
  if (broken_) {
    return make_error(HVD_ERR_TRANSPORT,
                      "no new transfers after an earlier failure (rank %d, send or receive to "
                      "rank %d refused)",
                      options_.rank, peer);
  }
  return peer_status_[peer] != UCS_OK ? peer_failure(peer) : Status::ok();
}

Status UcxTransport::check_peers() const {
  return first_failed_peer_ < 0 ? Status::ok() : peer_failure(first_failed_peer_);
}

// A failed wait ends all communication (the engine's work ends with it). The requests still in
// flight become the transport's (posted_), and no new ones are accepted; the caller's pointers
// are cleared. quiesce() then stops them once the engine has told its peers why.
void UcxTransport::abandon(Request* reqs, size_t count) {
  broken_ = true;
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i].impl == nullptr) continue;
    posted_.emplace(reqs[i].impl, Posted{reqs[i].is_recv, reqs[i].peer});  // control: not yet
    reqs[i].impl = nullptr;
  }
}

// After a failed wait the callers release their buffers, so no request may touch them any more,
// including those of a caller that returned early without waiting for them. UCX cannot cancel a
// send, and a receive already matched keeps writing: every endpoint is closed by force (after
// the notices queued for the peers went out), which ends the requests of live peers with an
// error, and every request in flight is waited for. A failed peer sends and asks for nothing
// more, but UCX 1.13 may keep its requests in flight for good: after a bounded wait they are
// left to UCX, and the worker is then never destroyed (~UcxTransport).
void UcxTransport::quiesce() {
  if (!broken_ || quiesced_) return;
  quiesced_ = true;
  const auto notices_until = Clock::now() + std::chrono::milliseconds(200);
  while (!outbox_.empty() && Clock::now() < notices_until) progress();
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  for (const auto& [request, posted] : posted_) {
    if (posted.is_recv) ucp_request_cancel(worker_, request);
  }
  // A failed peer's requests may never end (see above): no waiting for them.
  std::vector<bool> failed(peer_status_.size());
  for (size_t p = 0; p < failed.size(); ++p) failed[p] = peer_status_[p] != UCS_OK;
  std::vector<void*> closing;
  for (size_t p = 0; p < eps_.size(); ++p) {
    void* close_request = force_close(static_cast<int>(p));
    if (close_request != nullptr) closing.push_back(close_request);
  }
  for (void* request : closing) {
    finish(request, deadline);
    ucp_request_free(request);
  }
  for (auto it = posted_.begin(); it != posted_.end();) {
    if (!finish(it->first, failed[it->second.peer] ? Clock::now() : deadline)) {
      stuck_ = true;
      ++it;
      continue;
    }
    ucp_request_free(it->first);
    it = posted_.erase(it);
  }
}

// Progresses until `request` completes or `deadline`; true if it completed.
bool UcxTransport::finish(void* request, Clock::time_point deadline) {
  while (ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < deadline) {
    ucp_worker_progress(worker_);
  }
  return ucp_request_check_status(request) != UCS_INPROGRESS;
}

// Frees a completed data request.
void UcxTransport::release(void* request) {
  posted_.erase(request);
  ucp_request_free(request);
}

// Returns the close request to wait for, or nullptr.
void* UcxTransport::force_close(int peer) {
  if (eps_[peer] == nullptr) return nullptr;
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t sp = ucp_ep_close_nbx(eps_[peer], &param);
  eps_[peer] = nullptr;
  if (peer_status_[peer] == UCS_OK) peer_status_[peer] = UCS_ERR_CANCELED;
  return sp == nullptr || UCS_PTR_IS_ERR(sp) ? nullptr : sp;
}

}  // namespace hvdc::transport::ucx

#endif  // HVDC_HAVE_UCX
