// The store's connections from arrival to close: accepting them with a greeting, bounding those
// that have not authenticated, refusing strangers, and expiring hellos and gets that overran.
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bootstrap/tcp/store_server_loop.h"

namespace hvdc::bootstrap {

using common::strfmt;
using store_detail::Connection;

namespace {

// A real rank sends its hello as soon as it reads the greeting; a connection that has not
// within this time is someone else's and is dropped.
constexpr auto kHelloTimeout = std::chrono::seconds(10);
constexpr int kMaxAcceptsPerWakeup = 64;
// Out of descriptors: stop accepting for a moment rather than spin on a readable listen socket.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

}  // namespace

void StoreServer::Loop::accept_all() {
  for (int i = 0; i < kMaxAcceptsPerWakeup; ++i) {
    SocketAddress peer;
    peer.length = sizeof(peer.storage);
    const int fd =
        ::accept4(listen_fd_.get(), peer.get(), &peer.length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      HVDC_LOG_WARNING("rendezvous store: accept failed: %s", errno_text(errno).c_str());
      accept_resume_ = Clock::now() + kAcceptPause;
      return;
    }
    auto c = std::make_unique<Connection>();
    c->id = next_id_++;
    c->fd.reset(fd);
    c->peer = format_address(peer);
    Status st = prepare_socket(fd);
    if (st.is_ok()) st = random_bytes(c->nonce, sizeof(c->nonce));
    if (!st.is_ok()) {
      HVDC_LOG_ERROR("rendezvous store: dropping %s: %s", c->peer.c_str(), st.message().c_str());
      continue;
    }
    c->has_deadline = true;
    c->deadline = Clock::now() + kHelloTimeout;
    ServerHello hello;
    hello.authenticated = !options_.secret.empty();
    std::memcpy(hello.nonce, c->nonce, sizeof(c->nonce));
    c->out = encode_server_hello(hello);
    admit(std::move(c));
  }
}

void StoreServer::Loop::admit(std::unique_ptr<Connection> c) {
  if (unauthenticated_ >= max_unauthenticated_) drop_oldest_unauthenticated();
  ++unauthenticated_;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++stats_.accepted;
    stats_.peak_unauthenticated = std::max(stats_.peak_unauthenticated, unauthenticated_);
  }
  Connection* raw = c.get();
  connections_[raw->id] = std::move(c);
  flush(raw);
}

// The oldest has had the longest to send its hello; a real rank sends it at once, so a
// connection still silent is the likeliest not to be one.
void StoreServer::Loop::drop_oldest_unauthenticated() {
  for (auto& entry : connections_) {  // in id order: oldest first
    Connection* c = entry.second.get();
    if (c->closed || c->authenticated) continue;
    {
      std::lock_guard<std::mutex> lock(stats_mutex_);
      ++stats_.dropped_unauthenticated;
    }
    return refuse(c, strfmt("over %zu connections waiting to authenticate; dropping the oldest",
                            max_unauthenticated_));
  }
}

Connection* StoreServer::Loop::find(uint64_t id) {
  auto it = connections_.find(id);
  return it == connections_.end() || it->second->closed ? nullptr : it->second.get();
}

void StoreServer::Loop::expire(Clock::time_point now) {
  for (auto& entry : connections_) {
    Connection* c = entry.second.get();
    if (c->closed || !c->has_deadline || now < c->deadline) continue;
    c->has_deadline = false;
    if (!c->authenticated) {
      refuse(c, "no hello within the time allowed");
      continue;
    }
    StoreReply timed_out;
    timed_out.kind = StoreReplyKind::kTimedOut;
    table_.cancel(c->id, &timed_out.missing);
    c->waiting = false;
    reply(c, timed_out);
  }
}

void StoreServer::Loop::refuse(Connection* c, const std::string& why) {
  refusal_log_.warn(strfmt("rendezvous store: refused %s: %s", c->who().c_str(), why.c_str()));
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++stats_.refused;
  }
  close(c);
}

// Closes at once; the entry is erased after the current poll round, whose results may still
// name this connection (by id, never by descriptor, which the kernel may already reuse).
void StoreServer::Loop::close(Connection* c) {
  if (c->closed) return;
  if (!c->authenticated) --unauthenticated_;
  if (c->waiting) table_.cancel(c->id, nullptr);
  c->waiting = false;
  c->has_deadline = false;
  c->closed = true;
  c->fd.reset();
}

}  // namespace hvdc::bootstrap
