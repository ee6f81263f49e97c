// The UCX transport's setup and teardown: the context (with the settings hvdc needs from UCX),
// the worker, an endpoint per peer with peer error handling, and the bounded close. The class
// and the files that implement the rest are listed in ucx_transport_impl.h.
#include "transport/ucx/ucx_transport.h"

#include "hvdc_config.h"

#if HVDC_HAVE_UCX
#include <net/if.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "common/log.h"
#include "transport/ucx/ucx_lanes.h"
#include "transport/ucx/ucx_transport_impl.h"
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

namespace ucx {

Status ucx_error(const char* what, ucs_status_t status) {
  return make_error(HVD_ERR_TRANSPORT, "%s: %s", what, ucs_status_string(status));
}

namespace {

void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* ctx = static_cast<PeerContext*>(arg);
  HVDC_LOG_WARNING("connection to rank %d failed: %s", ctx->peer, ucs_status_string(status));
  ctx->transport->mark_peer_failed(ctx->peer, status);
}

// Whether UCX_TLS lets UCX use a transport of a family: unset; in a list, "all", one of the
// family's `aliases` or one of its `members`; in an exclusion list ("^..."), neither an alias
// nor every member. A setting for a family UCX does not use makes it warn at every worker
// creation that no transport took the setting.
bool ucx_tls_allows(std::initializer_list<const char*> aliases,
                    std::initializer_list<const char*> members) {
  const char* tls = std::getenv("UCX_TLS");
  if (tls == nullptr) return true;
  const std::string list = tls;
  auto names = [&](const char* name) { return list.find(name) != std::string::npos; };
  const bool an_alias = std::any_of(aliases.begin(), aliases.end(), names);
  if (!list.empty() && list[0] == '^') {
    return !an_alias && !std::all_of(members.begin(), members.end(), names);
  }
  return names("all") || an_alias || std::any_of(members.begin(), members.end(), names);
}

// Peer error handling excludes UCX 1.13's shared-memory transports unless they are told to
// handle errors too; without this, ranks on one host talk over TCP loopback (10x the latency).
// The environment spells it UCX_POSIX_ERROR_HANDLING / UCX_SYSV_ERROR_HANDLING; through
// ucp_config_modify both are the shared "MM_" table's ERROR_HANDLING field. A UCX_TLS that
// leaves shared memory out (e.g. "tcp", or "^shm") would make UCX warn about it.
bool shm_transports_allowed() {
  return ucx_tls_allows({"shm", "sm", "mm"}, {"posix", "sysv"});
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

// Whether UCX_NET_DEVICES, where set, names one of this host's network interfaces, which are
// TCP's devices ("mlx5_0:1" names an InfiniBand port, which TCP does not use).
bool tcp_device_allowed() {
  const char* devices = std::getenv("UCX_NET_DEVICES");
  if (devices == nullptr || std::string(devices) == "all") return true;
  struct if_nameindex* interfaces = if_nameindex();
  if (interfaces == nullptr) return true;  // cannot tell: UCX decides
  bool named = false;
  std::string list = std::string(devices) + ",";
  for (size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
    const std::string device = list.substr(at, comma - at);
    for (const struct if_nameindex* i = interfaces; i->if_index != 0; ++i) {
      named = named || device == i->if_name;
    }
  }
  if_freenameindex(interfaces);
  return named;
}

// UCX 1.13's TCP transport cuts an eager message into TX_SEG_SIZE pieces (8 KiB by default),
// one send() and one active-message header each, and the ring between hosts moves
// HVDC_SEGMENT_BYTES (256 KiB) messages: 32 pieces per message. With 64 KiB pieces and 128 KiB
// receive buffers, busbw between the netns pair went from 1.25 to 1.69 GB/s at 16 MiB and from
// 1.35 to 1.95 at 64 MiB (medians of 5 interleaved, docs/performance.md). The cost is memory:
// a send buffer of 64 KiB per send in flight, a receive buffer of 128 KiB per connection.
// Small messages (rounds, notices) go as before. UCX_TCP_TX_SEG_SIZE or UCX_TCP_RX_SEG_SIZE in
// the environment leaves both to the user. The names are the TCP table's own fields: UCX
// applies a name ucp does not know to each transport whose table has it (only TCP's has these),
// and warns at every worker creation where no transport took it, so they are set only where
// UCX may use TCP.
void set_tcp_segment_sizes(ucp_config_t* config) {
  if (std::getenv("UCX_TCP_TX_SEG_SIZE") != nullptr ||
      std::getenv("UCX_TCP_RX_SEG_SIZE") != nullptr) {
    return;
  }
  if (!ucx_tls_allows({}, {"tcp"}) || !tcp_device_allowed()) return;
  for (const auto& [field, value] :
       {std::pair{"TX_SEG_SIZE", "64k"}, std::pair{"RX_SEG_SIZE", "128k"}}) {
    ucs_status_t st = ucp_config_modify(config, field, value);
    if (st != UCS_OK) HVDC_LOG_DEBUG("ucp_config_modify(%s): %s", field, ucs_status_string(st));
  }
}

// Whether UCX reaches the peer of `ep` over TCP alone, from its own description of the
// endpoint (UCX 1.13 has no query for an endpoint's transports).
bool endpoint_only_tcp(ucp_ep_h ep) {
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = open_memstream(&text, &length);
  if (stream == nullptr) return false;
  ucp_ep_print_info(ep, stream);
  std::fclose(stream);
  const bool tcp = lanes_only_tcp(std::string_view(text, length));
  std::free(text);
  return tcp;
}

}  // namespace

Status UcxTransport::create_context() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) return ucx_error("ucp_config_read", st);
  enable_shm_error_handling(config);
  set_keepalive_interval(config);
  set_tcp_segment_sizes(config);
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucx_error("ucp_init", st);
  ucp_worker_params_t wparams = {};
  wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // Created here, then driven by one thread at a time (the engine's, or a caller running the
  // engine's passes under its mutex): serialized use, never concurrent.
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
  tcp_only_.assign(n, false);
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
    tcp_only_[p] = endpoint_only_tcp(eps_[p]);
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

}  // namespace ucx

Status create_ucx_transport(const UcxOptions& options, const AddressExchange& exchange,
                            std::unique_ptr<Transport>* out) {
  auto transport = std::make_unique<ucx::UcxTransport>(options);
  HVDC_RETURN_IF_ERROR(transport->init(exchange));
  *out = std::move(transport);
  return Status::ok();
}

#endif  // HVDC_HAVE_UCX

}  // namespace hvdc::transport
