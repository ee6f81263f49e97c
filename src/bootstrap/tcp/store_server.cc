// The store's server: one thread, one poll() over the listening socket, a wake-up eventfd and
// every connection. Connections are non-blocking; each is a small state machine (greeting
// sent -> hello verified -> requests), and nothing a peer sends before its hello verifies can
// make the store hold more than kStoreMaxHelloFrameBytes for it.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "bootstrap/tcp/socket.h"
#include "bootstrap/tcp/store.h"
#include "bootstrap/tcp/store_table.h"
#include "common/log.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::strfmt;

namespace {

// A real rank sends its hello as soon as it reads the greeting; a connection that has not
// within this time is someone else's and is dropped.
constexpr auto kHelloTimeout = std::chrono::seconds(10);
// Bounds for a get's own timeout, so the deadline arithmetic cannot overflow.
constexpr int64_t kMaxWaitMs = int64_t{7} * 24 * 3600 * 1000;
constexpr int kMaxAcceptsPerWakeup = 64;
// Out of descriptors: stop accepting for a moment rather than spin on a readable listen socket.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// Connections waiting to authenticate, when the job's size is unknown (see StoreServerOptions).
constexpr size_t kDefaultMaxUnauthenticated = 64;
// Each refusal names its peer, but a flood of strangers must not flood rank 0's log as well.
constexpr int kRefusalLogBurst = 10;
constexpr auto kRefusalLogWindow = std::chrono::seconds(10);

// At most kRefusalLogBurst refusal lines per kRefusalLogWindow, then one line counting the rest.
class RefusalLog {
 public:
  void warn(const std::string& line) {
    tick(Clock::now());
    if (logged_ < kRefusalLogBurst) {
      ++logged_;
      HVDC_LOG_WARNING("%s", line.c_str());
    } else {
      ++suppressed_;
    }
  }
  // Ends the window once it has passed, reporting what it left out.
  void tick(Clock::time_point now) {
    if (now - window_start_ < kRefusalLogWindow) return;
    if (suppressed_ > 0) {
      HVDC_LOG_WARNING("rendezvous store: refused %llu more connections (not logged one by one)",
                       static_cast<unsigned long long>(suppressed_));
    }
    window_start_ = now;
    logged_ = 0;
    suppressed_ = 0;
  }

 private:
  Clock::time_point window_start_{};
  int logged_ = 0;
  uint64_t suppressed_ = 0;
};

struct Connection {
  uint64_t id = 0;
  Fd fd;
  std::string peer;  // "ip:port"
  bool authenticated = false;
  int32_t rank = -1;
  uint8_t nonce[kStoreNonceBytes] = {};
  FrameReader reader{kStoreMaxHelloFrameBytes};
  FrameChannel channel;
  std::string out;  // sealed frames not yet sent
  size_t out_sent = 0;
  bool waiting = false;  // a get is pending
  bool has_deadline = false;
  Clock::time_point deadline;  // for the hello, then for a pending get
  bool closed = false;

  std::string who() const {
    return rank >= 0 ? strfmt("rank %d (%s)", rank, peer.c_str()) : "peer " + peer;
  }
};

}  // namespace

class StoreServer::Loop {
 public:
  explicit Loop(const StoreServerOptions& options)
      : options_(options),
        max_unauthenticated_(options.expected_size > 0
                                 ? 2 * static_cast<size_t>(options.expected_size) + 16
                                 : kDefaultMaxUnauthenticated) {}
  ~Loop() { stop(); }

  Status open();
  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void stop();

  const SocketAddress& bound() const { return bound_; }
  StoreServerStats stats() const {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    return stats_;
  }

 private:
  void run();
  int next_timeout_ms() const;
  void accept_all();
  void admit(std::unique_ptr<Connection> c);
  void drop_oldest_unauthenticated();
  void fail_all();
  void service(uint64_t id, short revents);
  void read_frames(Connection* c);
  void on_frame(Connection* c, std::string body);
  void on_hello(Connection* c, std::string body);
  void on_request(Connection* c, StoreRequest request);
  void on_set(Connection* c, StoreRequest request);
  void on_get(Connection* c, StoreRequest request);
  void send_values(Connection* c, std::vector<std::string> values);
  void reply(Connection* c, const StoreReply& reply);
  void flush(Connection* c);
  void expire(Clock::time_point now);
  void refuse(Connection* c, const std::string& why);
  void close(Connection* c);
  void note_buffer(const Connection& c);
  Connection* find(uint64_t id);

  StoreServerOptions options_;
  const size_t max_unauthenticated_;
  size_t unauthenticated_ = 0;  // open connections that have not authenticated yet
  RefusalLog refusal_log_;
  SocketAddress bound_;
  Fd listen_fd_;
  Fd wake_fd_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  Clock::time_point accept_resume_{};
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = 1;
  StoreTable table_;
  mutable std::mutex stats_mutex_;
  StoreServerStats stats_;
};

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

void StoreServer::Loop::service(uint64_t id, short revents) {
  Connection* c = find(id);
  if (c == nullptr) return;
  if ((revents & POLLOUT) != 0) flush(c);
  if (!c->closed && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_frames(c);
}

void StoreServer::Loop::note_buffer(const Connection& c) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  size_t& largest = c.authenticated ? stats_.largest_frame_buffer : stats_.largest_hello_buffer;
  largest = std::max(largest, c.reader.largest_buffer());
}

void StoreServer::Loop::read_frames(Connection* c) {
  while (!c->closed) {
    FrameReader::Result result;
    Status st = c->reader.read(c->fd.get(), &result);
    note_buffer(*c);
    if (!st.is_ok()) return refuse(c, st.message());
    if (result == FrameReader::Result::kPending) return;
    if (result == FrameReader::Result::kClosed) {
      if (c->reader.mid_frame()) return refuse(c, "connection closed in the middle of a frame");
      if (c->authenticated) HVDC_LOG_DEBUG("rendezvous store: %s left", c->who().c_str());
      return close(c);
    }
    on_frame(c, c->reader.take_body());
  }
}

void StoreServer::Loop::on_frame(Connection* c, std::string body) {
  if (!c->authenticated) return on_hello(c, std::move(body));
  if (!c->channel.open(&body)) {
    return refuse(c, strfmt("frame %llu failed authentication",
                            static_cast<unsigned long long>(c->channel.received())));
  }
  StoreRequest request;
  Status st = decode_request(body, &request);
  if (!st.is_ok()) return refuse(c, st.message());
  on_request(c, std::move(request));
}

// The hello carries the client's nonce, which the session key needs, so its payload is decoded
// (within the small pre-authentication limit) before its MAC can be checked.
void StoreServer::Loop::on_hello(Connection* c, std::string body) {
  const char* hint = options_.secret.empty() ? "" : " (a peer without this job's HVDC_SECRET?)";
  const size_t mac_bytes = options_.secret.empty() ? 0 : kStoreMacBytes;
  StoreRequest hello;
  Status st = body.size() < mac_bytes
                  ? make_error(HVD_ERR_BOOTSTRAP, "hello too short")
                  : decode_request(body.substr(0, body.size() - mac_bytes), &hello);
  if (st.is_ok() && hello.op != StoreOp::kHello) {
    st = make_error(HVD_ERR_BOOTSTRAP, "first frame is not a hello");
  }
  if (!st.is_ok()) return refuse(c, "bad hello: " + st.message() + hint);
  c->channel.start(options_.secret, c->nonce,
                   reinterpret_cast<const uint8_t*>(hello.client_nonce.data()), true);
  if (!c->channel.open(&body)) {
    return refuse(
        c, strfmt("hello of rank %d failed authentication (wrong HVDC_SECRET?)", hello.rank));
  }
  c->authenticated = true;
  --unauthenticated_;
  c->rank = hello.rank;
  c->has_deadline = false;
  c->reader.set_limit(kStoreMaxFrameBytes);
  HVDC_LOG_DEBUG("rendezvous store: %s joined", c->who().c_str());
  reply(c, StoreReply{});
}

void StoreServer::Loop::on_request(Connection* c, StoreRequest request) {
  // Clients wait for each answer, so a second request while a get is pending is not hvdc's.
  if (c->waiting) return refuse(c, "request sent while a get was pending");
  switch (request.op) {
    case StoreOp::kSet:
      return on_set(c, std::move(request));
    case StoreOp::kGet:
      return on_get(c, std::move(request));
    default:
      return refuse(c, "hello sent twice");
  }
}

void StoreServer::Loop::on_set(Connection* c, StoreRequest request) {
  std::vector<StoreTable::WaiterId> ready;
  table_.set(request.key, std::move(request.value), request.reads, &ready);
  reply(c, StoreReply{});
  for (StoreTable::WaiterId id : ready) {
    Connection* waiter = find(id);
    std::vector<std::string> values;
    if (waiter == nullptr || !table_.complete(id, &values)) continue;
    waiter->waiting = false;
    waiter->has_deadline = false;
    send_values(waiter, std::move(values));
  }
}

void StoreServer::Loop::on_get(Connection* c, StoreRequest request) {
  std::vector<std::string> values;
  if (table_.get(c->id, std::move(request.keys), &values)) return send_values(c, std::move(values));
  c->waiting = true;
  c->has_deadline = request.timeout_ms > 0;
  if (c->has_deadline) {
    c->deadline =
        Clock::now() + std::chrono::milliseconds(std::min(request.timeout_ms, kMaxWaitMs));
  }
}

void StoreServer::Loop::send_values(Connection* c, std::vector<std::string> values) {
  StoreReply reply_msg;
  const size_t bytes = values_reply_bytes(values) + c->channel.mac_bytes();
  if (bytes > kStoreMaxFrameBytes) {
    reply_msg.kind = StoreReplyKind::kError;
    reply_msg.error = strfmt(
        "the values asked for add up to %zu bytes, over the frame limit of %u; "
        "ask for fewer keys at a time",
        bytes, kStoreMaxFrameBytes);
  } else {
    reply_msg.kind = StoreReplyKind::kValues;
    reply_msg.values = std::move(values);
  }
  reply(c, reply_msg);
}

void StoreServer::Loop::reply(Connection* c, const StoreReply& reply_msg) {
  if (c->out_sent == c->out.size()) {
    c->out.clear();
    c->out_sent = 0;
  }
  c->out += c->channel.seal(encode_reply(reply_msg));
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++stats_.served;
  }
  flush(c);
}

void StoreServer::Loop::flush(Connection* c) {
  while (c->out_sent < c->out.size()) {
    const ssize_t sent =
        ::send(c->fd.get(), c->out.data() + c->out_sent, c->out.size() - c->out_sent, MSG_NOSIGNAL);
    if (sent > 0) {
      c->out_sent += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // POLLOUT resumes
    HVDC_LOG_DEBUG("rendezvous store: %s: send failed: %s", c->who().c_str(),
                   errno_text(errno).c_str());
    return close(c);
  }
  c->out.clear();
  c->out_sent = 0;
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
