// The UCX transport's class, shared by the files that implement it (only those include this):
// ucx_transport.cc sets the worker and its endpoints up and closes them, ucx_requests.cc posts
// and waits for data requests, ucx_failures.cc handles failed peers and stops every request
// after a failed wait, ucx_messages.cc carries control messages and sleeps on the worker's
// wakeup fd. Built only with UCX (HVDC_HAVE_UCX).
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/ucx/ucx_transport.h"
#include "transport/waiting.h"

namespace hvdc::transport::ucx {

using Clock = std::chrono::steady_clock;

struct PeerContext {
  class UcxTransport* transport = nullptr;
  int peer = -1;
};

// HVD_ERR_TRANSPORT naming the UCX call and its status.
Status ucx_error(const char* what, ucs_status_t status);

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
  Status wait_flags(const FlagWait* flags, size_t count, const Interrupt& interrupt) override;
  Status send_message(int peer, Tag tag, std::string_view bytes) override;
  bool poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) override;
  int progress() override;
  void sleep(int extra_fd, int timeout_ms) override;
  Status close() override;

  bool reaches_over_tcp_only(int peer) const override { return tcp_only_[peer]; }
  Status check_peers() const override;
  std::vector<int> waited_peers() const override;
  void quiesce() override;
  void mark_peer_failed(int peer, ucs_status_t status);

 private:
  Status create_context();
  Status connect(const AddressExchange& exchange);
  Status peer_failure(int peer) const;
  Status check_usable(int peer) const;  // for a new data request
  Status check_post(int peer);          // check_usable(), refusing every post after a refusal
  Status refuse_posts(Status status);   // a post failed: no new requests, quiesce() stops all
  // Collects finished requests; a failed one becomes the returned status.
  Status reap(Request* reqs, size_t count, bool* all_done);
  void abandon(Request* reqs, size_t count);
  void* force_close(int peer);
  bool finish(void* request, Clock::time_point deadline);
  void release(void* request);
  // Past the progress timeout at `now`.
  bool stalled_since(Clock::time_point last_moved, Clock::time_point now) const;
  Status stall_error(const Request* reqs, size_t count);  // notes the stalled peers
  Status wait_for(Request* reqs, size_t count, const Interrupt& interrupt);
  void reap_outbox();

  UcxOptions options_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::vector<ucp_ep_h> eps_;
  std::vector<ucs_status_t> peer_status_;
  std::vector<bool> tcp_only_;  // per peer: its endpoint's lanes are all TCP's
  int first_failed_peer_ = -1;
  bool broken_ = false;    // a wait or post failed: no new requests
  bool quiesced_ = false;  // quiesce() has closed every endpoint
  bool stuck_ = false;     // a request stayed in flight after quiesce()
  WaitRecord waits_;       // whom the wait in progress (or the last that timed out) waits for
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
  void release_outgoing(std::list<Outgoing>::iterator it);
  std::list<Outgoing> outbox_;
  std::list<Outgoing> spare_;  // sent entries kept with their storage (send_message)
};

}  // namespace hvdc::transport::ucx
