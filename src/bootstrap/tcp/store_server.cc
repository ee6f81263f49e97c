// The store's server: one thread, one poll() over the listening socket, a wake-up eventfd and
// every connection. Connections are non-blocking; each is a small state machine (greeting
// sent -> hello verified -> requests), and nothing a peer sends before its hello verifies can
// make the store hold more than kStoreMaxHelloFrameBytes for it.
// The loop's class and the files that implement the rest are listed in store_server_loop.h.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/tcp/store_server_loop.h"

namespace hvdc::bootstrap {

using common::make_error;

Status StoreServer::Loop::open() {
  SocketAddress address;
  std::string why;
  HVDC_RETURN_IF_ERROR(
      choose_listen_address(options_.master_addr, options_.iface, options_.port, &address, &why));
  HVDC_RETURN_IF_ERROR(listen_on(address, &listen_fd_, &bound_));
  wake_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_.valid()) {
    return make_error(HVD_ERR_SYSTEM, "eventfd failed: %s", errno_text(errno).c_str());
  }
  HVDC_LOG_INFO("rendezvous store listening on %s (%s)", format_address(bound_).c_str(),
                why.c_str());
  if (options_.secret.empty()) {
    HVDC_LOG_WARNING(
        "rendezvous store on %s is unauthenticated: any process that can reach it can join or "
        "disturb this job; set HVDC_SECRET (hvdcrun sets one)",
        format_address(bound_).c_str());
  }
  return Status::ok();
}

void StoreServer::Loop::stop() {
  if (!thread_.joinable()) return;
  stopping_.store(true);
  const uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof(one));
  (void)ignored;
  thread_.join();
  connections_.clear();
  listen_fd_.reset();
  wake_fd_.reset();
}

void StoreServer::Loop::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  while (!stopping_.load()) {
    fds.clear();
    ids.clear();
    const bool accepting = Clock::now() >= accept_resume_;
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    fds.push_back({accepting ? listen_fd_.get() : -1, POLLIN, 0});  // poll skips negative fds
    for (const auto& [id, c] : connections_) {
      const short events = POLLIN | (c->out.size() > c->out_sent ? POLLOUT : 0);
      fds.push_back({c->fd.get(), events, 0});
      ids.push_back(id);
    }
    const int rc = ::poll(fds.data(), fds.size(), next_timeout_ms());
    if (rc < 0 && errno != EINTR) {
      fail_all();
      break;
    }
    if (rc > 0) {
      if (fds[1].revents != 0) accept_all();
      for (size_t i = 0; i < ids.size(); ++i) {
        if (fds[2 + i].revents != 0) service(ids[i], fds[2 + i].revents);
      }
    }
    expire(Clock::now());
    refusal_log_.tick(Clock::now());
    for (auto it = connections_.begin(); it != connections_.end();) {
      it = it->second->closed ? connections_.erase(it) : std::next(it);
    }
  }
}

int StoreServer::Loop::next_timeout_ms() const {
  bool any = false;
  Clock::time_point next{};
  auto consider = [&](Clock::time_point t) {
    if (!any || t < next) next = t;
    any = true;
  };
  if (Clock::now() < accept_resume_) consider(accept_resume_);
  for (const auto& entry : connections_) {
    if (entry.second->has_deadline) consider(entry.second->deadline);
  }
  return any ? poll_timeout_ms(next) : -1;
}

// The store cannot serve any more; closing every connection makes each rank fail at once with
// an I/O error instead of waiting out its timeout for answers that will never come.
void StoreServer::Loop::fail_all() {
  HVDC_LOG_ERROR(
      "rendezvous store: poll failed: %s; the store stops and closes all %zu connections, so "
      "the ranks' bootstrap will fail",
      errno_text(errno).c_str(), connections_.size());
  for (auto& entry : connections_) close(entry.second.get());
  listen_fd_.reset();
}

StoreServer::StoreServer(std::unique_ptr<Loop> loop) : loop_(std::move(loop)) {}

StoreServer::~StoreServer() {
  stop();
}

Status StoreServer::start(const StoreServerOptions& options, std::unique_ptr<StoreServer>* out) {
  if (options.port < 0 || options.port > 65535) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "store port %d is out of range", options.port);
  }
  auto loop = std::make_unique<Loop>(options);
  Status st = loop->open();
  if (!st.is_ok()) return st.with_context("cannot start the rendezvous store");
  loop->start();
  out->reset(new StoreServer(std::move(loop)));
  return Status::ok();
}

int StoreServer::port() const {
  return loop_->bound().port();
}

std::string StoreServer::listen_address() const {
  return format_address(loop_->bound());
}

std::string StoreServer::connect_host() const {
  const SocketAddress& bound = loop_->bound();
  if (!bound.is_wildcard()) return format_host(bound);
  return bound.family() == AF_INET6 ? "::1" : "127.0.0.1";
}

StoreServerStats StoreServer::stats() const {
  return loop_->stats();
}

void StoreServer::stop() {
  loop_->stop();
}

}  // namespace hvdc::bootstrap
