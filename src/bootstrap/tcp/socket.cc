#include "bootstrap/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <random>
#include <thread>

#include "common/log.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::strfmt;

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

int SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

void SocketAddress::set_port(int port) {
  const uint16_t net = htons(static_cast<uint16_t>(port));
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = net;
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = net;
}

bool SocketAddress::is_wildcard() const {
  if (family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  const in6_addr& a6 = reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr;
  return family() == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&a6);
}

namespace {

bool is_loopback(const SocketAddress& a) {
  if (a.family() == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr) >> 24) == 127;
  }
  const in6_addr& a6 = reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr;
  return a.family() == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool same_host_address(const SocketAddress& a, const SocketAddress& b) {
  if (a.family() != b.family()) return false;
  if (a.family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&b.storage)->sin_addr.s_addr;
  }
  return a.family() == AF_INET6 &&
         std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr,
                     &reinterpret_cast<const sockaddr_in6*>(&b.storage)->sin6_addr,
                     sizeof(in6_addr)) == 0;
}

SocketAddress from_sockaddr(const sockaddr* sa, int port) {
  SocketAddress out;
  out.length = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  std::memcpy(&out.storage, sa, out.length);
  out.set_port(port);
  return out;
}

SocketAddress wildcard(int family, int port) {
  SocketAddress out;
  out.storage.ss_family = static_cast<sa_family_t>(family);
  out.length = family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (family == AF_INET) reinterpret_cast<sockaddr_in*>(&out.storage)->sin_addr.s_addr = INADDR_ANY;
  out.set_port(port);
  return out;
}

struct Interface {
  std::string name;
  SocketAddress address;
};

Status local_interfaces(std::vector<Interface>* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return make_error(HVD_ERR_SYSTEM, "getifaddrs failed: %s", errno_text(errno).c_str());
  }
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    const int family = it->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    out->push_back({it->ifa_name, from_sockaddr(it->ifa_addr, 0)});
  }
  freeifaddrs(list);
  return Status::ok();
}

bool is_numeric_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return false;
  freeaddrinfo(result);
  return true;
}

Status address_of_interface(const std::vector<Interface>& locals, const std::string& iface,
                            int port, SocketAddress* out) {
  const Interface* pick = nullptr;
  std::string names;
  for (const Interface& local : locals) {
    if (names.find(local.name) == std::string::npos)
      names += (names.empty() ? "" : ", ") + local.name;
    if (local.name != iface) continue;
    // IPv4 first: it is what the other ranks most likely reach the host by.
    if (pick == nullptr ||
        (pick->address.family() == AF_INET6 && local.address.family() == AF_INET))
      pick = &local;
  }
  if (pick == nullptr) {
    return make_error(HVD_ERR_BOOTSTRAP,
                      "HVDC_IFACE=%s names no interface with an IPv4 or IPv6 address on this host "
                      "(interfaces: %s)",
                      iface.c_str(), names.c_str());
  }
  *out = pick->address;
  out->set_port(port);
  return Status::ok();
}

}  // namespace

std::string errno_text(int err) {
  char buf[128];
  // GNU strerror_r: returns a pointer to the text, which may or may not be buf.
  return strerror_r(err, buf, sizeof(buf));
}

std::string format_endpoint(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return strfmt("[%s]:%d", host.c_str(), port);
  return strfmt("%s:%d", host.c_str(), port);
}

std::string format_host(const SocketAddress& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_addr, text,
              sizeof(text));
  } else if (address.family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_addr, text,
              sizeof(text));
  }
  return text;
}

std::string format_address(const SocketAddress& address) {
  return format_endpoint(format_host(address), address.port());
}

Status resolve(const std::string& host, int port, std::vector<SocketAddress>* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0) {
    return make_error(HVD_ERR_BOOTSTRAP, "cannot resolve '%s': %s", host.c_str(), gai_strerror(rc));
  }
  for (addrinfo* it = result; it != nullptr; it = it->ai_next) {
    if (it->ai_family == AF_INET || it->ai_family == AF_INET6) {
      out->push_back(from_sockaddr(it->ai_addr, port));
    }
  }
  freeaddrinfo(result);
  return Status::ok();
}

// The rules, in order:
//  1. HVDC_IFACE names an interface: its address, so the store is reachable only on the network
//     the operator chose.
//  2. HVDC_MASTER_ADDR is one of this host's own addresses: that address. A loopback address
//     counts only when it was written as a number (or "localhost"): Debian maps the hostname to
//     127.0.1.1 in /etc/hosts, and listening there would shut out ranks on other hosts, which
//     reach the same name through DNS.
//  3. Otherwise (a name for a NAT or floating address, or a hostname mapped to loopback) the
//     wildcard address, because no local address is known to be the one the others will use.
//     The log says so; HVDC_IFACE narrows it.
Status choose_listen_address(const std::string& master_addr, const std::string& iface, int port,
                             SocketAddress* out, std::string* why) {
  std::vector<Interface> locals;
  HVDC_RETURN_IF_ERROR(local_interfaces(&locals));
  if (!iface.empty()) {
    HVDC_RETURN_IF_ERROR(address_of_interface(locals, iface, port, out));
    *why = "the address of HVDC_IFACE=" + iface;
    return Status::ok();
  }
  std::vector<SocketAddress> resolved;
  Status st = resolve(master_addr, port, &resolved);
  const bool literal = master_addr == "localhost" || is_numeric_host(master_addr);
  for (const SocketAddress& candidate : resolved) {
    if (is_loopback(candidate) && !literal) continue;
    for (const Interface& local : locals) {
      if (!same_host_address(candidate, local.address)) continue;
      *out = candidate;
      *why = "the master address " + master_addr + ", a local address";
      return Status::ok();
    }
  }
  *out = wildcard(resolved.empty() ? AF_INET : resolved.front().family(), port);
  *why = st.is_ok() ? "all interfaces: master address " + master_addr +
                          " is not a local address here; set HVDC_IFACE to listen on one"
                    : "all interfaces: " + st.message();
  return Status::ok();
}

Status listen_on(const SocketAddress& address, Fd* out, SocketAddress* bound) {
  Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    return make_error(HVD_ERR_SYSTEM, "socket failed: %s", errno_text(errno).c_str());
  }
  // A restarted job may find its port still in TIME_WAIT from the previous one.
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), address.get(), address.length) != 0) {
    const int err = errno;
    return make_error(HVD_ERR_BOOTSTRAP, "cannot listen on %s: %s%s",
                      format_address(address).c_str(), errno_text(err).c_str(),
                      err == EADDRINUSE ? " (another job may be using HVDC_MASTER_PORT)" : "");
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    return make_error(HVD_ERR_SYSTEM, "listen on %s failed: %s", format_address(address).c_str(),
                      errno_text(errno).c_str());
  }
  bound->length = sizeof(bound->storage);
  if (getsockname(fd.get(), bound->get(), &bound->length) != 0) {
    return make_error(HVD_ERR_SYSTEM, "getsockname failed: %s", errno_text(errno).c_str());
  }
  *out = std::move(fd);
  return Status::ok();
}

Status prepare_socket(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return make_error(HVD_ERR_SYSTEM, "fcntl(O_NONBLOCK) failed: %s", errno_text(errno).c_str());
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return Status::ok();
}

int poll_timeout_ms(Clock::time_point deadline) {
  const auto now = Clock::now();
  if (deadline <= now) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

namespace {

// One attempt may not use up the whole deadline: an address that silently drops SYNs (an
// unreachable IPv6 address listed first) would otherwise leave no time for the others.
constexpr auto kMaxAttempt = std::chrono::seconds(5);
// Longer timeouts (about 116 days) are treated as this, so converting them to the clock's
// nanoseconds cannot overflow.
constexpr double kMaxTimeoutSeconds = 1e7;

// One attempt; returns 0 or the errno that ended it.
int try_connect(const SocketAddress& address, Clock::time_point deadline, Fd* out) {
  Fd fd(::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return errno;
  if (::connect(fd.get(), address.get(), address.length) != 0) {
    if (errno != EINPROGRESS) return errno;
    pollfd p{fd.get(), POLLOUT, 0};
    int rc;
    do rc = ::poll(&p, 1, poll_timeout_ms(deadline));
    while (rc < 0 && errno == EINTR);
    if (rc == 0) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc < 0 || getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    if (err != 0) return err;
  }
  // With nothing listening on a local port in the ephemeral range, TCP's simultaneous open can
  // connect a socket to itself; that is no store.
  SocketAddress self, peer;
  self.length = peer.length = sizeof(self.storage);
  if (getsockname(fd.get(), self.get(), &self.length) == 0 &&
      getpeername(fd.get(), peer.get(), &peer.length) == 0 && same_host_address(self, peer) &&
      self.port() == peer.port()) {
    return ECONNREFUSED;
  }
  if (!prepare_socket(fd.get()).is_ok()) return errno;
  *out = std::move(fd);
  return 0;
}

}  // namespace

Status connect_with_backoff(const std::string& host, int port, int rank, double timeout_seconds,
                            Fd* out) {
  using std::chrono::duration;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(duration<double>(
                                    std::min(timeout_seconds, kMaxTimeoutSeconds)));
  std::minstd_rand jitter(static_cast<uint32_t>(rank) * 7919u + static_cast<uint32_t>(getpid()));
  std::uniform_real_distribution<double> spread(0.75, 1.25);
  double backoff_s = 0.01;
  int attempts = 0;
  std::string last_error = "none";
  for (;;) {
    std::vector<SocketAddress> addresses;
    Status st = resolve(host, port, &addresses);
    if (!st.is_ok()) last_error = st.message();
    for (const SocketAddress& address : addresses) {
      ++attempts;
      const int err = try_connect(address, std::min(deadline, Clock::now() + kMaxAttempt), out);
      if (err == 0) return Status::ok();
      last_error = errno_text(err);
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    const auto pause =
        std::chrono::duration_cast<Clock::duration>(duration<double>(backoff_s * spread(jitter)));
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    backoff_s = std::min(backoff_s * 2, 1.0);
    if (Clock::now() >= deadline) break;
  }
  const double waited = duration<double>(Clock::now() - start).count();
  return make_error(HVD_ERR_BOOTSTRAP,
                    "rank %d timed out after %.1f s connecting to the rendezvous store at %s (%d "
                    "attempts, last error: %s); check that rank 0 is running and that "
                    "HVDC_MASTER_ADDR / HVDC_MASTER_PORT point to it",
                    rank, waited, format_endpoint(host, port).c_str(), attempts,
                    last_error.c_str());
}

Status write_all(int fd, const void* data, size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t sent = ::send(fd, p, n, MSG_NOSIGNAL);
    if (sent > 0) {
      p += sent;
      n -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      return make_error(HVD_ERR_BOOTSTRAP, "send failed: %s", errno_text(errno).c_str());
    }
    pollfd p_out{fd, POLLOUT, 0};
    const int rc = ::poll(&p_out, 1, poll_timeout_ms(deadline));
    if (rc == 0) return make_error(HVD_ERR_BOOTSTRAP, "send timed out");
    if (rc < 0 && errno != EINTR) {
      return make_error(HVD_ERR_BOOTSTRAP, "poll failed: %s", errno_text(errno).c_str());
    }
  }
  return Status::ok();
}

Status wait_readable(int fd, Clock::time_point deadline, bool* ready) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (rc >= 0) {
      *ready = rc > 0;
      return Status::ok();
    }
    if (errno != EINTR) {
      return make_error(HVD_ERR_BOOTSTRAP, "poll failed: %s", errno_text(errno).c_str());
    }
  }
}

Status random_bytes(void* out, size_t n) {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return make_error(HVD_ERR_SYSTEM, "getrandom failed: %s", errno_text(errno).c_str());
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return Status::ok();
}

}  // namespace hvdc::bootstrap
