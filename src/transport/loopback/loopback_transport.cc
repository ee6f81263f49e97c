#include "transport/loopback/loopback_transport.h"

#include <chrono>
#include <unordered_set>

#include "transport/loopback/fabric.h"
#include "transport/waiting.h"

namespace hvdc::transport::loopback {

using common::make_error;

namespace {

using Clock = std::chrono::steady_clock;

// How long one sleep inside a wait lasts at most: an abort request from another thread reaches
// the interrupt through the engine's own fd, which a wait does not watch.
constexpr int kWaitSleepMs = 5;

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackFabric> fabric, const TransportOptions& options)
      : fabric_(std::move(fabric)), options_(options), mailbox_(fabric_->mailbox(options.rank)) {
    mailbox_.reset(true);
  }
  ~LoopbackTransport() override;

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  Status isend(int peer, Tag tag, const void* buf, size_t bytes, Request* req) override;
  Status irecv(int peer, Tag tag, void* buf, size_t bytes, Request* req) override;
  Status wait(Request* reqs, size_t count, const Interrupt& interrupt) override;
  Status wait_flags(const FlagWait* flags, size_t count, const Interrupt& interrupt) override;
  Status send_message(int peer, Tag tag, std::string_view bytes) override;
  bool poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) override;
  Status check_peers() const override;
  std::vector<int> waited_peers() const override;
  void quiesce() override;
  int progress() override {
    fabric_->count_progress_call();
    return mailbox_.take_deliveries();
  }
  void sleep(int extra_fd, int timeout_ms) override { mailbox_.sleep(extra_fd, timeout_ms); }
  Status close() override;

 private:
  Status peer_failure(int peer) const;
  Status check_usable(int peer) const;
  Status check_post(int peer);
  Status reap(Request* reqs, size_t count, bool* all_done);
  void release(PostedRecv* recv);
  void cancel_all();
  Status wait_for(Request* reqs, size_t count, const Interrupt& interrupt);
  Status stall_error(const Request* reqs, size_t count);
  bool stalled_since(Clock::time_point last_moved) const;

  std::shared_ptr<LoopbackFabric> fabric_;
  TransportOptions options_;
  Mailbox& mailbox_;
  bool broken_ = false;  // a wait or post failed: no new requests
  bool closed_ = false;
  std::unordered_set<PostedRecv*> posted_;  // receives in flight, waited for or not
  WaitRecord waits_;  // whom the wait in progress (or the last that timed out) waits for
};

LoopbackTransport::~LoopbackTransport() {
  cancel_all();
  mailbox_.reset(false);
}

Status LoopbackTransport::peer_failure(int peer) const {
  return make_error(HVD_ERR_PEER_FAILURE,
                    "connection to rank %d failed: the loopback fabric failed it (fault injection)",
                    peer);
}

Status LoopbackTransport::check_usable(int peer) const {
  if (peer < 0 || peer >= options_.size || peer == options_.rank) {
    return make_error(HVD_ERR_INTERNAL, "rank %d: transfer with rank %d (of %d) requested",
                      options_.rank, peer, options_.size);
  }
  if (broken_ || closed_) {
    return make_error(HVD_ERR_TRANSPORT,
                      "no new transfers after an earlier failure (rank %d, send or receive to "
                      "rank %d refused)",
                      options_.rank, peer);
  }
  return fabric_->link_failed(options_.rank, peer) ? peer_failure(peer) : Status::ok();
}

Status LoopbackTransport::check_peers() const {
  const int peer = fabric_->first_failed_peer(options_.rank);
  return peer < 0 ? Status::ok() : peer_failure(peer);
}

// A refused post ends all communication, as in the UCX transport (Transport::isend).
Status LoopbackTransport::check_post(int peer) {
  Status usable = check_usable(peer);
  if (!usable.is_ok()) broken_ = true;
  return usable;
}

Status LoopbackTransport::isend(int peer, Tag tag, const void* buf, size_t bytes, Request* req) {
  HVDC_RETURN_IF_ERROR(check_post(peer));
  fabric_->send(options_.rank, peer, tag, buf, bytes);
  *req = Request{nullptr, peer, false};  // copied: complete already
  return Status::ok();
}

Status LoopbackTransport::irecv(int peer, Tag tag, void* buf, size_t bytes, Request* req) {
  HVDC_RETURN_IF_ERROR(check_post(peer));
  auto* recv = new PostedRecv;
  recv->tag = tag;
  recv->buf = buf;
  recv->bytes = bytes;
  recv->peer = peer;
  posted_.insert(recv);
  mailbox_.post(recv);
  *req = Request{recv, peer, true};
  return Status::ok();
}

void LoopbackTransport::release(PostedRecv* recv) {
  posted_.erase(recv);
  delete recv;
}

// After this no sender writes into a buffer of a receive posted here.
void LoopbackTransport::cancel_all() {
  for (PostedRecv* recv : posted_) {
    mailbox_.cancel(recv);
    delete recv;
  }
  posted_.clear();
}

Status LoopbackTransport::reap(Request* reqs, size_t count, bool* all_done) {
  Status failure;
  *all_done = true;
  for (size_t i = 0; i < count; ++i) {
    Request& r = reqs[i];
    if (r.impl == nullptr) continue;
    auto* recv = static_cast<PostedRecv*>(r.impl);
    const int state = recv->state.load(std::memory_order_acquire);
    if (state == PostedRecv::kPending) {
      if (fabric_->link_failed(options_.rank, r.peer) && failure.is_ok()) {
        failure = peer_failure(r.peer);
      }
      *all_done = false;
      continue;
    }
    if (state == PostedRecv::kWrongSize && failure.is_ok()) {
      failure = make_error(HVD_ERR_TRANSPORT,
                           "receive from rank %d failed: %zu bytes arrived for a %zu-byte receive",
                           r.peer, recv->arrived_bytes, recv->bytes);
    }
    release(recv);
    r.impl = nullptr;
  }
  return failure;
}

Status LoopbackTransport::wait(Request* reqs, size_t count, const Interrupt& interrupt) {
  return waits_.track(reqs, count, [&] { return wait_for(reqs, count, interrupt); });
}

Status LoopbackTransport::wait_flags(const FlagWait* flags, size_t count,
                                     const Interrupt& interrupt) {
  return wait_on_flags(flags, count, waits_, flag_wait_hooks(*this, options_), interrupt);
}

std::vector<int> LoopbackTransport::waited_peers() const {
  return waits_.peers();
}

// The UCX transport's rules: only a waited request that completes counts as movement for the
// progress timeout; the interrupt runs once nothing moves; a failed wait hands its requests in
// flight to the transport (quiesce cancels them) and refuses new ones.
Status LoopbackTransport::wait_for(Request* reqs, size_t count, const Interrupt& interrupt) {
  auto last_moved = Clock::now();
  size_t left = incomplete(reqs, count);
  for (;;) {
    bool all_done = false;
    Status st = reap(reqs, count, &all_done);
    if (st.is_ok() && all_done) return st;
    const size_t now_left = incomplete(reqs, count);
    if (st.is_ok() && now_left != left) {
      left = now_left;
      last_moved = Clock::now();
      continue;
    }
    const bool events = st.is_ok() && progress() > 0;
    if (st.is_ok() && stalled_since(last_moved)) st = stall_error(reqs, count);
    if (st.is_ok() && events) continue;
    if (st.is_ok() && interrupt) st = interrupt();
    // A peer's notice names the cause, which the failed connection does not.
    if (st.code() == HVD_ERR_PEER_FAILURE && interrupt) {
      Status cause = interrupt();
      if (!cause.is_ok()) st = cause;
    }
    if (!st.is_ok()) {
      broken_ = true;
      for (size_t i = 0; i < count; ++i) reqs[i].impl = nullptr;  // posted_ keeps them
      return st;
    }
    mailbox_.sleep(-1, kWaitSleepMs);
  }
}

Status LoopbackTransport::stall_error(const Request* reqs, size_t count) {
  waits_.note_stalled(reqs, count);
  return make_error(HVD_ERR_TIMEOUT, "rank %d: no progress for %g s (HVDC_TIMEOUT) waiting to %s",
                    options_.rank, options_.progress_timeout_seconds,
                    describe_waiting(reqs, count).c_str());
}

bool LoopbackTransport::stalled_since(Clock::time_point last_moved) const {
  if (options_.progress_timeout_seconds <= 0) return false;
  return Clock::now() - last_moved >
         std::chrono::duration<double>(options_.progress_timeout_seconds);
}

// A refused post or a failed wait marks the transport broken (check_post, wait_for); beyond that,
// whenever a peer failed, receives posted here and never waited for must not write into
// buffers their caller releases.
void LoopbackTransport::quiesce() {
  if (broken_ || fabric_->first_failed_peer(options_.rank) >= 0) cancel_all();
}

Status LoopbackTransport::send_message(int peer, Tag tag, std::string_view bytes) {
  if (peer < 0 || peer >= options_.size || peer == options_.rank) {
    return make_error(HVD_ERR_INTERNAL, "rank %d: control message to rank %d (of %d)",
                      options_.rank, peer, options_.size);
  }
  if (fabric_->link_failed(options_.rank, peer)) return peer_failure(peer);
  if (!closed_) fabric_->send(options_.rank, peer, tag, bytes.data(), bytes.size());
  return Status::ok();
}

bool LoopbackTransport::poll_message(Tag want, Tag mask, Tag* got, std::string* bytes) {
  return mailbox_.take(want, mask, got, bytes);
}

Status LoopbackTransport::close() {
  cancel_all();
  closed_ = true;
  return Status::ok();
}

}  // namespace

Status create_loopback_transport(std::shared_ptr<LoopbackFabric> fabric,
                                 const TransportOptions& options, std::unique_ptr<Transport>* out) {
  if (!fabric || options.size != fabric->size() || options.rank < 0 ||
      options.rank >= options.size) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "loopback transport: rank %d of %d does not fit a fabric of %d ranks",
                      options.rank, options.size, fabric ? fabric->size() : 0);
  }
  *out = std::make_unique<LoopbackTransport>(std::move(fabric), options);
  return Status::ok();
}

}  // namespace hvdc::transport::loopback
