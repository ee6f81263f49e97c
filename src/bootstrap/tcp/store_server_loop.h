// The rendezvous store's server loop, shared by the files that implement it (only those include
// this): store_server.cc runs the poll loop and owns the thread, store_server_connections.cc
// accepts, refuses, times out and closes connections, store_server_requests.cc reads frames and
// answers the hello, sets and gets.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "bootstrap/tcp/socket.h"
#include "bootstrap/tcp/store.h"
#include "bootstrap/tcp/store_table.h"
#include "common/log.h"

namespace hvdc::bootstrap {

namespace store_detail {

using common::strfmt;

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

}  // namespace store_detail

class StoreServer::Loop {
 public:
  explicit Loop(const StoreServerOptions& options)
      : options_(options),
        max_unauthenticated_(options.expected_size > 0
                                 ? 2 * static_cast<size_t>(options.expected_size) + 16
                                 : store_detail::kDefaultMaxUnauthenticated) {}
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
  using Connection = store_detail::Connection;

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
  store_detail::RefusalLog refusal_log_;
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

}  // namespace hvdc::bootstrap
