// The UCX transport's control messages (sent from an outbox, received by probing), its worker
// progress, and its sleep on the worker's wakeup fd.
#include "hvdc_config.h"

#if HVDC_HAVE_UCX
#include <poll.h>
#include <ucp/api/ucp.h>

#include <string>

#include "common/log.h"
#include "transport/ucx/ucx_transport_impl.h"

namespace hvdc::transport::ucx {

// The bytes go to an entry of the outbox, which keeps them until UCX is done with them. Most
// control messages leave within the call (UCX copies them into its own buffers); their entry,
// storage included, goes back to the spares for the next message.
Status UcxTransport::send_message(int peer, Tag tag, std::string_view bytes) {
  if (peer_status_[peer] != UCS_OK) return peer_failure(peer);
  if (spare_.empty()) {
    outbox_.emplace_back();
  } else {
    outbox_.splice(outbox_.end(), spare_, spare_.begin());
  }
  Outgoing& out = outbox_.back();
  out.bytes.assign(bytes.data(), bytes.size());
  out.request = nullptr;
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp =
      ucp_tag_send_nbx(eps_[peer], out.bytes.data(), out.bytes.size(), tag, &param);
  if (UCS_PTR_IS_ERR(sp) || sp == nullptr) {
    release_outgoing(std::prev(outbox_.end()));
    if (UCS_PTR_IS_ERR(sp)) return ucx_error("ucp_tag_send_nbx (control)", UCS_PTR_STATUS(sp));
    return Status::ok();
  }
  out.request = sp;
  return Status::ok();
}

// Keeps a few entries with their storage for the next messages.
void UcxTransport::release_outgoing(std::list<Outgoing>::iterator it) {
  constexpr size_t kSpares = 8;
  constexpr size_t kSpareBytes = 64 << 10;  // larger messages do not pin their storage
  if (spare_.size() >= kSpares) {
    outbox_.erase(it);
    return;
  }
  if (it->bytes.capacity() > kSpareBytes) std::string().swap(it->bytes);
  spare_.splice(spare_.end(), outbox_, it);
}

void UcxTransport::reap_outbox() {
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    if (ucp_request_check_status(it->request) == UCS_INPROGRESS) {
      ++it;
      continue;
    }
    ucp_request_free(it->request);
    release_outgoing(it++);
  }
}

bool UcxTransport::poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) {
  ucp_tag_recv_info_t info = {};
  ucp_tag_message_h msg = ucp_tag_probe_nb(worker_, want, mask, 1, &info);
  if (msg == nullptr) return false;
  bytes->resize(info.length);  // the receive overwrites it; a reused buffer is not cleared first
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp = ucp_tag_msg_recv_nbx(worker_, bytes->data(), info.length, msg, &param);
  if (UCS_PTR_IS_ERR(sp)) {
    HVDC_LOG_ERROR("control receive failed: %s", ucs_status_string(UCS_PTR_STATUS(sp)));
    return false;
  }
  Request req{sp, tag_source(info.sender_tag), true};
  if (sp != nullptr && !wait(&req, 1, Interrupt()).is_ok()) {
    quiesce();  // now: the receive writes into *bytes, which the caller owns
    return false;
  }
  *got = info.sender_tag;
  return true;
}

int UcxTransport::progress() {
  int events = 0;
  while (ucp_worker_progress(worker_) != 0) ++events;
  if (!outbox_.empty()) reap_outbox();
  return events;
}

void UcxTransport::sleep(int extra_fd, int timeout_ms) {
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return;  // events are waiting: no sleep
  struct pollfd fds[2] = {{efd_, POLLIN, 0}, {extra_fd, POLLIN, 0}};
  ::poll(fds, extra_fd >= 0 ? 2 : 1, timeout_ms);
}

}  // namespace hvdc::transport::ucx

#endif  // HVDC_HAVE_UCX
