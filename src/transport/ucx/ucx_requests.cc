// The UCX transport's data requests: posting them, and waiting for them with a spin, then a sleep
// on the worker, bounded by the progress timeout (HVDC_TIMEOUT).
#include "hvdc_config.h"

#if HVDC_HAVE_UCX
#include <ucp/api/ucp.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/ucx/ucx_transport_impl.h"
#include "transport/waiting.h"

namespace hvdc::transport::ucx {

using common::make_error;

// A refused or failed post ends all communication, as a failed wait does: the op returns at once,
// before waiting for the requests it posted so far (a ring's receive from its left), and its
// caller releases their buffers, so quiesce() must stop them. UCX 1.13 ended a send on a timed-out
// endpoint at once, and a message that arrived later was written into a freed receive buffer.
Status UcxTransport::refuse_posts(Status status) {
  broken_ = true;
  return status;
}

Status UcxTransport::check_post(int peer) {
  Status usable = check_usable(peer);
  return usable.is_ok() ? usable : refuse_posts(std::move(usable));
}

Status UcxTransport::isend(int peer, Tag tag, const void* buf, size_t bytes, Request* req) {
  HVDC_RETURN_IF_ERROR(check_post(peer));
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp = ucp_tag_send_nbx(eps_[peer], buf, bytes, tag, &param);
  if (UCS_PTR_IS_ERR(sp)) return refuse_posts(ucx_error("ucp_tag_send_nbx", UCS_PTR_STATUS(sp)));
  *req = Request{sp, peer, false};
  if (sp != nullptr) posted_.emplace(sp, Posted{false, peer});
  return Status::ok();
}

Status UcxTransport::irecv(int peer, Tag tag, void* buf, size_t bytes, Request* req) {
  HVDC_RETURN_IF_ERROR(check_post(peer));
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp = ucp_tag_recv_nbx(worker_, buf, bytes, tag, ~Tag{0}, &param);
  if (UCS_PTR_IS_ERR(sp)) return refuse_posts(ucx_error("ucp_tag_recv_nbx", UCS_PTR_STATUS(sp)));
  *req = Request{sp, peer, true};
  if (sp != nullptr) posted_.emplace(sp, Posted{true, peer});
  return Status::ok();
}

Status UcxTransport::reap(Request* reqs, size_t count, bool* all_done) {
  Status failure;
  *all_done = true;
  for (size_t i = 0; i < count; ++i) {
    Request& r = reqs[i];
    if (r.impl == nullptr) continue;
    ucs_status_t st = ucp_request_check_status(r.impl);
    if (st == UCS_INPROGRESS) {
      // Receives are posted on the worker, so a dead sender never fails them: check its endpoint.
      if (r.is_recv && peer_status_[r.peer] != UCS_OK && failure.is_ok()) {
        failure = peer_failure(r.peer);
      }
      *all_done = false;
      continue;
    }
    release(r.impl);
    r.impl = nullptr;
    if (st != UCS_OK && failure.is_ok()) {
      failure =
          peer_status_[r.peer] != UCS_OK
              ? peer_failure(r.peer)
              : make_error(HVD_ERR_TRANSPORT, "%s rank %d failed: %s",
                           r.is_recv ? "receive from" : "send to", r.peer, ucs_status_string(st));
    }
  }
  return failure;
}

Status UcxTransport::wait(Request* reqs, size_t count, const Interrupt& interrupt) {
  return waits_.track(reqs, count, [&] { return wait_for(reqs, count, interrupt); });
}

Status UcxTransport::wait_flags(const FlagWait* flags, size_t count, const Interrupt& interrupt) {
  return wait_on_flags(flags, count, waits_, flag_wait_hooks(*this, options_), interrupt);
}

std::vector<int> UcxTransport::waited_peers() const {
  return waits_.peers();
}

Status UcxTransport::wait_for(Request* reqs, size_t count, const Interrupt& interrupt) {
  const auto spin = std::chrono::microseconds(options_.spin_micros);
  auto last_moved = Clock::now();
  auto spin_until = last_moved + spin;
  size_t left = incomplete(reqs, count);
  for (;;) {
    bool all_done = false;
    Status st = reap(reqs, count, &all_done);
    if (st.is_ok() && all_done) return st;
    // Only a waited request that completes counts as movement for HVDC_TIMEOUT: worker events
    // do not, since live peers' keepalives arrive every second while a stopped peer holds us up.
    const size_t now_left = incomplete(reqs, count);
    const bool moved = st.is_ok() && now_left != left;
    const bool events = st.is_ok() && !moved && progress() > 0;
    const Clock::time_point now = Clock::now();  // once per pass: this loop spins
    if (moved || events) spin_until = now + spin;
    if (moved) {
      left = now_left;
      last_moved = now;
      continue;
    }
    if (st.is_ok() && stalled_since(last_moved, now)) st = stall_error(reqs, count);
    if (st.is_ok() && events) continue;
    // Only once nothing moves and every completion was collected: a peer's notice that arrived
    // after its last data must not fail an op that data completes.
    if (st.is_ok() && interrupt) st = interrupt();
    // A peer that closed its connection after an earlier failure sent its notice first: that
    // notice names the cause, which the closed connection does not.
    if (st.code() == HVD_ERR_PEER_FAILURE && interrupt) {
      Status cause = interrupt();
      if (!cause.is_ok()) st = cause;
    }
    if (!st.is_ok()) {
      abandon(reqs, count);
      return st;
    }
    if (now > spin_until) sleep(-1, 1);
  }
}

// The engine names the cause once the stalled ranks have compared whom they wait for.
Status UcxTransport::stall_error(const Request* reqs, size_t count) {
  waits_.note_stalled(reqs, count);
  return make_error(HVD_ERR_TIMEOUT, "rank %d: no progress for %g s (HVDC_TIMEOUT) waiting to %s",
                    options_.rank, options_.progress_timeout_seconds,
                    describe_waiting(reqs, count).c_str());
}

bool UcxTransport::stalled_since(Clock::time_point last_moved, Clock::time_point now) const {
  if (options_.progress_timeout_seconds <= 0) return false;
  return now - last_moved > std::chrono::duration<double>(options_.progress_timeout_seconds);
}

}  // namespace hvdc::transport::ucx

#endif  // HVDC_HAVE_UCX
