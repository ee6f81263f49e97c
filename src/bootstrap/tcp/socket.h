// TCP plumbing for the rendezvous store: owned descriptors, addresses as text, the choice of the
// listen address, connecting with backoff, and deadline-bounded writes.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::bootstrap {

using common::Status;
using Clock = std::chrono::steady_clock;

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  int port() const;
  void set_port(int port);
  bool is_wildcard() const;
};

// "10.0.0.1:29500" or "[fe80::1]:29500".
std::string format_address(const SocketAddress& address);
// The host part alone: "10.0.0.1" or "fe80::1".
std::string format_host(const SocketAddress& address);
std::string format_endpoint(const std::string& host, int port);
std::string errno_text(int err);

// Every address host:port resolves to (numeric or by name).
Status resolve(const std::string& host, int port, std::vector<SocketAddress>* out);

// Where rank 0's store listens. why says which rule chose it, for the log.
Status choose_listen_address(const std::string& master_addr, const std::string& iface, int port,
                             SocketAddress* out, std::string* why);

// A non-blocking, close-on-exec listening socket; bound receives the address with the port the
// kernel picked when address asked for port 0.
Status listen_on(const SocketAddress& address, Fd* out, SocketAddress* bound);

// Connects to host:port, retrying refused or unreachable attempts with exponential backoff (with
// jitter, so that many ranks do not knock in step) until timeout_seconds have passed. The
// timeout error names the address, the rank and the time waited.
Status connect_with_backoff(const std::string& host, int port, int rank, double timeout_seconds,
                            Fd* out);

// Makes a socket non-blocking and turns off Nagle (the store's messages are small requests that
// wait for their replies).
Status prepare_socket(int fd);

// Writes all of data to a non-blocking socket, waiting for room until the deadline.
Status write_all(int fd, const void* data, size_t n, Clock::time_point deadline);

// Waits until fd has data (or an end of stream) to read; *ready is false at the deadline.
Status wait_readable(int fd, Clock::time_point deadline, bool* ready);

// Milliseconds from now to the deadline for poll(), rounded up and clamped to [0, INT_MAX].
int poll_timeout_ms(Clock::time_point deadline);

// Fills out from the kernel's random source.
Status random_bytes(void* out, size_t n);

}  // namespace hvdc::bootstrap
