#include "transport/ucx/ucx_transport.h"

#include "hvdc_config.h"

#if HVDC_HAVE_UCX
#include <poll.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <list>
#include <string>
#include <unordered_map>

#include "common/log.h"
#endif

namespace hvdc::transport {

using common::make_error;

#if !HVDC_HAVE_UCX

Status create_ucx_transport(const UcxOptions&, const AddressExchange&,
                            std::unique_ptr<Transport>*) {
  return make_error(HVD_ERR_UNSUPPORTED,
                    "hvdc was built without UCX (-Ducx=disabled or no UCX found at build time); "
                    "only a single rank can run");
}

#else

namespace {

using Clock = std::chrono::steady_clock;

struct PeerContext {
  class UcxTransport* transport = nullptr;
  int peer = -1;
};

Status ucx_error(const char* what, ucs_status_t status) {
  return make_error(HVD_ERR_TRANSPORT, "%s: %s", what, ucs_status_string(status));
}

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(const UcxOptions& options) : options_(options) {}
  ~UcxTransport() override;
  Status init(const AddressExchange& exchange);

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  Status isend(int peer, Tag tag, const void* buf, size_t bytes, Request* req) override;
  Status irecv(int peer, Tag tag, void* buf, size_t bytes, Request* req) override;
  Status wait(Request* reqs, size_t count, const Interrupt& interrupt) override;
  Status send_message(int peer, Tag tag, std::string bytes) override;
  bool poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) override;
  int progress() override;
  void sleep(int extra_fd, int timeout_ms) override;
  Status close() override;

  Status check_peers() const override;
  std::vector<int> waited_peers() const override;
  void quiesce() override;
  void mark_peer_failed(int peer, ucs_status_t status);

 private:
  Status create_context();
  Status connect(const AddressExchange& exchange);
  Status peer_failure(int peer) const;
  Status check_usable(int peer) const;  // for a new data request
  // Collects finished requests; a failed one becomes the returned status.
  Status reap(Request* reqs, size_t count, bool* all_done);
  void abandon(Request* reqs, size_t count);
  void* force_close(int peer);
  bool finish(void* request, Clock::time_point deadline);
  void release(void* request);
  bool stalled_since(Clock::time_point last_moved) const;  // past the progress timeout
  Status stall_error(const Request* reqs, size_t count);   // notes stalled_peers_
  Status wait_for(Request* reqs, size_t count, const Interrupt& interrupt);
  void reap_outbox();

  UcxOptions options_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::vector<ucp_ep_h> eps_;
  std::vector<ucs_status_t> peer_status_;
  int first_failed_peer_ = -1;
  bool broken_ = false;                 // a wait failed: no new requests (abandon)
  bool quiesced_ = false;               // quiesce() has closed every endpoint
  bool stuck_ = false;                  // a request stayed in flight after quiesce()
  const Request* wait_reqs_ = nullptr;  // the wait in progress
  size_t wait_count_ = 0;
  std::vector<int> stalled_peers_;  // of the wait that timed out
  struct Posted {
    bool is_recv;
    int peer;
  };
  std::unordered_map<void*, Posted> posted_;  // data requests in flight
  std::unique_ptr<PeerContext[]> peer_contexts_;
  struct Outgoing {
    std::string bytes;
    void* request = nullptr;
  };
  std::list<Outgoing> outbox_;
};

void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* ctx = static_cast<PeerContext*>(arg);
  HVDC_LOG_WARNING("connection to rank %d failed: %s", ctx->peer, ucs_status_string(status));
  ctx->transport->mark_peer_failed(ctx->peer, status);
}

// Peer error handling excludes UCX 1.13's shared-memory transports unless they are told to
// handle errors too; without this, ranks on one host talk over TCP loopback (10x the latency).
// The environment spells it UCX_POSIX_ERROR_HANDLING / UCX_SYSV_ERROR_HANDLING; through
// ucp_config_modify both are the shared "MM_" table's ERROR_HANDLING field.
// A UCX_TLS that leaves shared memory out (e.g. "tcp") makes UCX warn about the setting at
// every worker creation, so it is set only where shared memory may be used.
bool shm_transports_allowed() {
  const char* tls = std::getenv("UCX_TLS");
  if (tls == nullptr) return true;
  const std::string list = tls;
  if (!list.empty() && list[0] == '^') return true;  // an exclusion list
  for (const char* name : {"all", "shm", "sm", "posix", "sysv", "mm"}) {
    if (list.find(name) != std::string::npos) return true;
  }
  return false;
}

// UCX notices a dead peer (its process gone, its host unreachable) only when it next talks to it:
// a transfer, or a keepalive probe, by default every 20 s. hvdc's promise of an error within a
// few seconds needs the probes at 1 s (a few bytes per peer per second). UCX_KEEPALIVE_INTERVAL
// in the environment wins.
void set_keepalive_interval(ucp_config_t* config) {
  if (std::getenv("UCX_KEEPALIVE_INTERVAL") != nullptr) return;
  ucs_status_t st = ucp_config_modify(config, "KEEPALIVE_INTERVAL", "1s");
  if (st != UCS_OK)
    HVDC_LOG_DEBUG("ucp_config_modify(KEEPALIVE_INTERVAL): %s", ucs_status_string(st));
}

void enable_shm_error_handling(ucp_config_t* config) {
  if (std::getenv("UCX_POSIX_ERROR_HANDLING") != nullptr ||
      std::getenv("UCX_SYSV_ERROR_HANDLING") != nullptr ||
      std::getenv("UCX_MM_ERROR_HANDLING") != nullptr) {
    return;  // the user's choice wins
  }
  if (!shm_transports_allowed()) return;
  ucs_status_t st = ucp_config_modify(config, "MM_ERROR_HANDLING", "y");
  if (st != UCS_OK)
    HVDC_LOG_DEBUG("ucp_config_modify(MM_ERROR_HANDLING): %s", ucs_status_string(st));
}

Status UcxTransport::create_context() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error("ucp_config_read", st);
  enable_shm_error_handling(config);
  set_keepalive_interval(config);
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_error("ucp_init", st);
  ucp_worker_params_t wparams = {};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Created here, then driven by the engine thread alone: serialized use, never concurrent.
  wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wparams, &worker_);
  if (st != UCS_OK) return ucx_error("ucp_worker_create", st);
  st = ucp_worker_get_efd(worker_, &efd_);
  if (st != UCS_OK) return ucx_error("ucp_worker_get_efd", st);
  return Status::ok();
}

Status UcxTransport::connect(const AddressExchange& exchange) {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  ucs_status_t st = ucp_worker_get_address(worker_, &address, &length);
  if (st != UCS_OK) return ucx_error("ucp_worker_get_address", st);
  std::string mine(reinterpret_cast<const char*>(address), length);
  ucp_worker_release_address(worker_, address);
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(exchange(mine, &all));
  const int n = options_.size;
  for (int p = 0; p < n; ++p) {
    if (static_cast<int>(all.size()) != n || all[p].empty()) {
      return make_error(HVD_ERR_TRANSPORT,
                        "the address exchange gave no worker address for rank %d", p);
    }
  }
  eps_.assign(n, nullptr);
  peer_status_.assign(n, UCS_OK);
  peer_contexts_.reset(new PeerContext[n]);
  for (int p = 0; p < n; ++p) {
    peer_contexts_[p] = {this, p};
    ucp_ep_params_t ep = {};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(all[p].data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_endpoint_error;
    ep.err_handler.arg = &peer_contexts_[p];
    st = ucp_ep_create(worker_, &ep, &eps_[p]);
    if (st != UCS_OK) {
      return make_error(HVD_ERR_TRANSPORT, "ucp_ep_create to rank %d: %s", p,
                        ucs_status_string(st));
    }
  }
  return Status::ok();
}

Status UcxTransport::init(const AddressExchange& exchange) {
  HVDC_RETURN_IF_ERROR(create_context());
  return connect(exchange);
}

UcxTransport::~UcxTransport() {
  quiesce();
  for (Outgoing& out : outbox_) {
    if (out.request != nullptr) ucp_request_free(out.request);
  }
  bool failed = stuck_;
  for (ucs_status_t st : peer_status_) failed |= st != UCS_OK;
  if (failed) {
    // After a peer failed, UCX 1.13 may hold requests of its endpoint in flight for good (ours,
    // or its own protocol's), and destroying the worker then trips UCX's assertions, which
    // abort the process. A failure ends the job: the worker, its context and the error
    // handlers' arguments are left for the process exit.
    HVDC_LOG_DEBUG("a peer failed; the UCX worker is left for the process exit");
    (void)peer_contexts_.release();
    return;
  }
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

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

Status UcxTransport::isend(int peer, Tag tag, const void* buf, size_t bytes, Request* req) {
  HVDC_RETURN_IF_ERROR(check_usable(peer));
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp = ucp_tag_send_nbx(eps_[peer], buf, bytes, tag, &param);
  if (UCS_PTR_IS_ERR(sp)) return ucx_error("ucp_tag_send_nbx", UCS_PTR_STATUS(sp));
  *req = Request{sp, peer, false};
  if (sp != nullptr) posted_.emplace(sp, Posted{false, peer});
  return Status::ok();
}

Status UcxTransport::irecv(int peer, Tag tag, void* buf, size_t bytes, Request* req) {
  HVDC_RETURN_IF_ERROR(check_usable(peer));
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp = ucp_tag_recv_nbx(worker_, buf, bytes, tag, ~Tag{0}, &param);
  if (UCS_PTR_IS_ERR(sp)) return ucx_error("ucp_tag_recv_nbx", UCS_PTR_STATUS(sp));
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

namespace {

size_t incomplete(const Request* reqs, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += reqs[i].impl != nullptr ? 1 : 0;
  return n;
}

// The peers of the requests not yet complete, ascending, once each.
std::vector<int> peers_of(const Request* reqs, size_t count) {
  std::vector<int> peers;
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i].impl != nullptr) peers.push_back(reqs[i].peer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

// "receive from rank 1, send to rank 2": what a stuck wait still waits for.
std::string describe_waiting(const Request* reqs, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && out.size() < 200; ++i) {
    if (reqs[i].impl == nullptr) continue;
    bool listed = false;  // several segments to or from one peer: one mention
    for (size_t j = 0; j < i && !listed; ++j) {
      listed = reqs[j].impl != nullptr && reqs[j].peer == reqs[i].peer &&
               reqs[j].is_recv == reqs[i].is_recv;
    }
    if (listed) continue;
    out += common::strfmt("%s%s rank %d", out.empty() ? "" : ", ",
                          reqs[i].is_recv ? "receive from" : "send to", reqs[i].peer);
  }
  return out;
}

}  // namespace

Status UcxTransport::wait(Request* reqs, size_t count, const Interrupt& interrupt) {
  // Waits nest (an interrupt may receive a control message): restore the outer one after.
  const Request* outer_reqs = wait_reqs_;
  const size_t outer_count = wait_count_;
  wait_reqs_ = reqs;
  wait_count_ = count;
  Status st = wait_for(reqs, count, interrupt);
  wait_reqs_ = outer_reqs;
  wait_count_ = outer_count;
  return st;
}

std::vector<int> UcxTransport::waited_peers() const {
  return wait_reqs_ != nullptr ? peers_of(wait_reqs_, wait_count_) : stalled_peers_;
}

Status UcxTransport::wait_for(Request* reqs, size_t count, const Interrupt& interrupt) {
  const auto spin = std::chrono::microseconds(options_.spin_micros);
  auto spin_until = Clock::now() + spin;
  auto last_moved = Clock::now();
  size_t left = incomplete(reqs, count);
  for (;;) {
    bool all_done = false;
    Status st = reap(reqs, count, &all_done);
    if (st.is_ok() && all_done) return st;
    // Only a waited request that completes counts as movement for HVDC_TIMEOUT: worker events
    // do not, since live peers' keepalives arrive every second while a stopped peer holds us up.
    const size_t now_left = incomplete(reqs, count);
    if (st.is_ok() && now_left != left) {
      left = now_left;
      last_moved = spin_until = Clock::now();
      spin_until += spin;
      continue;
    }
    const bool events = st.is_ok() && progress() > 0;
    if (events) spin_until = Clock::now() + spin;
    if (st.is_ok() && stalled_since(last_moved)) st = stall_error(reqs, count);
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
    if (Clock::now() > spin_until) sleep(-1, 1);
  }
}

// The engine names the cause once the stalled ranks have compared whom they wait for.
Status UcxTransport::stall_error(const Request* reqs, size_t count) {
  stalled_peers_ = peers_of(reqs, count);
  return make_error(HVD_ERR_TIMEOUT, "rank %d: no progress for %g s (HVDC_TIMEOUT) waiting to %s",
                    options_.rank, options_.progress_timeout_seconds,
                    describe_waiting(reqs, count).c_str());
}

bool UcxTransport::stalled_since(Clock::time_point last_moved) const {
  if (options_.progress_timeout_seconds <= 0) return false;
  return Clock::now() - last_moved >
         std::chrono::duration<double>(options_.progress_timeout_seconds);
}

Status UcxTransport::send_message(int peer, Tag tag, std::string bytes) {
  if (peer_status_[peer] != UCS_OK) return peer_failure(peer);
  outbox_.push_back(Outgoing{std::move(bytes), nullptr});
  Outgoing& out = outbox_.back();
  ucp_request_param_t param = {};
  ucs_status_ptr_t sp =
      ucp_tag_send_nbx(eps_[peer], out.bytes.data(), out.bytes.size(), tag, &param);
  if (UCS_PTR_IS_ERR(sp)) {
    outbox_.pop_back();
    return ucx_error("ucp_tag_send_nbx (control)", UCS_PTR_STATUS(sp));
  }
  if (sp == nullptr) {
    outbox_.pop_back();
  } else {
    out.request = sp;
  }
  return Status::ok();
}

void UcxTransport::reap_outbox() {
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    if (ucp_request_check_status(it->request) == UCS_INPROGRESS) {
      ++it;
      continue;
    }
    ucp_request_free(it->request);
    it = outbox_.erase(it);
  }
}

bool UcxTransport::poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) {
  ucp_tag_recv_info_t info = {};
  ucp_tag_message_h msg = ucp_tag_probe_nb(worker_, want, mask, 1, &info);
  if (msg == nullptr) return false;
  bytes->assign(info.length, '\0');
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

Status UcxTransport::close() {
  quiesce();
  std::vector<void*> closing;
  for (size_t p = 0; p < eps_.size(); ++p) {
    if (eps_[p] == nullptr) continue;
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = peer_status_[p] == UCS_OK ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t sp = ucp_ep_close_nbx(eps_[p], &param);
    if (sp != nullptr && !UCS_PTR_IS_ERR(sp)) closing.push_back(sp);
    eps_[p] = nullptr;
  }
  // Bounded: a peer that vanished must not hold up shutdown.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (void* req : closing) {
    while (ucp_request_check_status(req) == UCS_INPROGRESS && Clock::now() < deadline) {
      ucp_worker_progress(worker_);
    }
    ucp_request_free(req);
  }
  // Notices peers sent while shutting down are never read; consume them so that UCX does not
  // report unmatched messages when the worker goes.
  Tag tag;
  std::string bytes;
  ucp_worker_progress(worker_);
  while (poll_message(0, 0, &tag, &bytes)) {
  }
  return Status::ok();
}

}  // namespace

Status create_ucx_transport(const UcxOptions& options, const AddressExchange& exchange,
                            std::unique_ptr<Transport>* out) {
  auto transport = std::make_unique<UcxTransport>(options);
  HVDC_RETURN_IF_ERROR(transport->init(exchange));
  *out = std::move(transport);
  return Status::ok();
}

#endif  // HVDC_HAVE_UCX

}  // namespace hvdc::transport
