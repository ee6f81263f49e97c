// tcp_blast: the raw TCP bandwidth of a link, one stream, measured at the receiver. compare.sh
// runs it across the multihost suite's veth pair (one way, and both ways at once) in the same
// run as the allreduces, so the link's limit is measured, never quoted.
//   tcp_blast recv PORT              accepts one connection, reads to EOF, prints one JSON line:
//                                    {"bytes": N, "seconds": S, "gbps": G} (from the first byte)
//   tcp_blast send HOST PORT SECONDS connects (retrying for 10 s while the receiver starts) and
//                                    sends for SECONDS, then closes
//   tcp_blast duplex-listen PORT SECONDS, tcp_blast duplex HOST PORT SECONDS
//                                    one connection, both ways at once from one thread of one
//                                    process on each end (as an allreduce's rank sends and
//                                    receives); each end sends for SECONDS and prints what it
//                                    received, as recv does
//   tcp_blast exchange-listen PORT BYTES, tcp_blast exchange HOST PORT BYTES
//                                    one connection; per round both ends send BYTES and receive
//                                    BYTES at once, as an np-2 allreduce of BYTES moves them (a
//                                    burst, where the modes above stream), with send() calls of
//                                    56 KiB, 64 KiB, 128 KiB, 256 KiB (those below BYTES) and the
//                                    whole BYTES in turn; prints
//                                    {"bytes": B, "rounds": R, "by_piece": {"57344": G, ...},
//                                    "gbps": G} (GB/s each way; gbps: the best piece size). How
//                                    a burst is written moves its rate 2x on the netns pair
//                                    (docs/performance.md, "Two hosts: messages in pieces").
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kChunk = 1 << 20 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int parse_port(const char* text, unsigned short* port) {
  char* end = NULL;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > 65535) {
    fprintf(stderr, "tcp_blast: bad port '%s' (want 1-65535)\n", text);
    return 0;
  }
  *port = (unsigned short)v;
  return 1;
}

// The bytes received on a connection, from the first to the last.
struct Tally {
  unsigned long long bytes;
  double first, last;
};

static void tally_add(struct Tally* t, size_t got) {
  t->last = now_s();
  if (t->bytes == 0) t->first = t->last;
  t->bytes += got;
}

static int print_tally(const struct Tally* t) {
  const double seconds = t->last - t->first;
  printf("{\"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.4f}\n", t->bytes, seconds,
         seconds > 0 ? t->bytes / seconds / 1e9 : 0.0);
  return t->bytes > 0 ? 0 : 1;
}

// Listens on `port` and accepts one connection; -1 on failure (said on stderr).
static int accept_one(unsigned short port) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(listener, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(listener, 1) != 0) {
    fprintf(stderr, "tcp_blast: cannot listen on port %u: %s\n", port, strerror(errno));
    close(listener);
    return -1;
  }
  const int conn = accept(listener, NULL, NULL);
  if (conn < 0) fprintf(stderr, "tcp_blast: accept failed: %s\n", strerror(errno));
  close(listener);
  return conn;
}

static int run_receiver(unsigned short port) {
  const int conn = accept_one(port);
  if (conn < 0) return 1;
  char* buf = malloc(kChunk);
  struct Tally tally = {0, 0, 0};
  for (;;) {
    const ssize_t got = recv(conn, buf, kChunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fprintf(stderr, "tcp_blast: recv failed: %s\n", strerror(errno));
      return 1;
    }
    if (got == 0) break;
    tally_add(&tally, (size_t)got);
  }
  free(buf);
  close(conn);
  return print_tally(&tally);
}

static int transient(void) {
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

// Sends for `seconds` and receives until the peer's end of stream, both at once on a
// non-blocking socket; prints what it received.
static int run_duplex(int fd, double seconds) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  char* out = calloc(1, kChunk);
  char* in = malloc(kChunk);
  struct Tally tally = {0, 0, 0};
  const double end = now_s() + seconds;
  size_t out_at = 0;
  int sending = 1, receiving = 1, rc = 0;
  while (rc == 0 && (sending || receiving)) {
    struct pollfd p = {fd, (short)((sending ? POLLOUT : 0) | (receiving ? POLLIN : 0)), 0};
    if (poll(&p, 1, 1000) < 0 && errno != EINTR) rc = 1;
    if (receiving && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t got = recv(fd, in, kChunk, 0);
      if (got > 0) tally_add(&tally, (size_t)got);
      if (got == 0) receiving = 0;
      if (got < 0 && !transient()) rc = 1;
    }
    if (sending && (p.revents & POLLOUT) && now_s() >= end) {
      shutdown(fd, SHUT_WR);
      sending = 0;
    } else if (sending && (p.revents & POLLOUT)) {
      const ssize_t sent = send(fd, out + out_at, kChunk - out_at, MSG_NOSIGNAL);
      if (sent > 0) out_at = (out_at + (size_t)sent) % kChunk;
      if (sent < 0 && !transient()) rc = 1;
    }
  }
  if (rc != 0) fprintf(stderr, "tcp_blast: duplex transfer failed: %s\n", strerror(errno));
  free(out);
  free(in);
  close(fd);
  return rc != 0 ? rc : print_tally(&tally);
}

// One round: sends `bytes` of `out` in calls of at most `piece` while receiving `bytes` into
// `in`, on a non-blocking socket. 0, or 1 with the reason on stderr.
static int exchange_round(int fd, const char* out, char* in, size_t bytes, size_t piece) {
  size_t sent = 0, got = 0;
  while (sent < bytes || got < bytes) {
    struct pollfd p = {fd, (short)((sent < bytes ? POLLOUT : 0) | (got < bytes ? POLLIN : 0)), 0};
    const int ready = poll(&p, 1, 10000);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      fprintf(stderr, "tcp_blast: exchange stalled: %s\n",
              ready < 0 ? strerror(errno) : "no progress for 10 s");
      return 1;
    }
    if (got < bytes && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = recv(fd, in + got, bytes - got, 0);
      if (n == 0 || (n < 0 && !transient())) {
        fprintf(stderr, "tcp_blast: exchange recv failed: %s\n", n == 0 ? "EOF" : strerror(errno));
        return 1;
      }
      if (n > 0) got += (size_t)n;
    }
    if (sent < bytes && (p.revents & POLLOUT)) {
      const size_t want = bytes - sent < piece ? bytes - sent : piece;
      const ssize_t n = send(fd, out + sent, want, MSG_NOSIGNAL);
      if (n < 0 && !transient()) {
        fprintf(stderr, "tcp_blast: exchange send failed: %s\n", strerror(errno));
        return 1;
      }
      if (n > 0) sent += (size_t)n;
    }
  }
  return 0;
}

// Both ends run the same rounds in the same order: one untimed, then `rounds` timed, per piece
// size.
static int run_exchange(int fd, size_t bytes) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  // As UCX and Open MPI set it: otherwise a round's last short segment waits for an ACK that
  // the peer delays.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // 56 KiB fits one packet the kernel builds from a send() (64 KiB with headers, in whole
  // segments: 65160 bytes at MTU 1500), as hvdc's pieces between hosts do (docs/engine.md).
  const size_t pieces[] = {56 << 10, 64 << 10, 128 << 10, 256 << 10, bytes};
  const long rounds = bytes >= (64u << 20) ? 4 : (long)((256u << 20) / bytes);
  char* out = calloc(1, bytes);
  char* in = malloc(bytes);
  int rc = out == NULL || in == NULL;
  double best = 0;
  int first = 1;
  printf("{\"bytes\": %zu, \"rounds\": %ld, \"by_piece\": {", bytes, rounds);
  for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]) && rc == 0; ++k) {
    if (pieces[k] >= bytes && k + 1 < sizeof(pieces) / sizeof(pieces[0])) continue;
    rc = exchange_round(fd, out, in, bytes, pieces[k]);
    const double start = now_s();
    for (long r = 0; r < rounds && rc == 0; ++r) rc = exchange_round(fd, out, in, bytes, pieces[k]);
    const double gbps = (double)bytes * rounds / (now_s() - start) / 1e9;
    if (gbps > best) best = gbps;
    printf("%s\"%zu\": %.4f", first ? "" : ", ", pieces[k], gbps);
    first = 0;
  }
  printf("}, \"gbps\": %.4f}\n", best);
  free(out);
  free(in);
  close(fd);
  return rc;
}

// BYTES for exchange: 1 to 1 GiB.
static size_t parse_bytes(const char* text) {
  char* end = NULL;
  const unsigned long long v = strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > (1ull << 30)) {
    fprintf(stderr, "tcp_blast: bad BYTES '%s' (want 1-1073741824)\n", text);
    return 0;
  }
  return (size_t)v;
}

static int connect_with_retry(const char* host, unsigned short port) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "tcp_blast: bad IPv4 address '%s'\n", host);
    return -1;
  }
  const double give_up = now_s() + 10;
  for (;;) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr*)&addr, sizeof(addr)) == 0) return fd;
    const int why = errno;
    close(fd);
    if (now_s() > give_up) {
      fprintf(stderr, "tcp_blast: cannot connect to %s:%u: %s\n", host, port, strerror(why));
      return -1;
    }
    usleep(20000);
  }
}

static int run_sender(const char* host, unsigned short port, double seconds) {
  const int fd = connect_with_retry(host, port);
  if (fd < 0) return 1;
  char* buf = calloc(1, kChunk);
  const double end = now_s() + seconds;
  while (now_s() < end) {
    size_t off = 0;
    while (off < kChunk) {
      const ssize_t sent = send(fd, buf + off, kChunk - off, 0);
      if (sent < 0 && errno == EINTR) continue;
      if (sent < 0) {
        fprintf(stderr, "tcp_blast: send failed: %s\n", strerror(errno));
        return 1;
      }
      off += (size_t)sent;
    }
  }
  free(buf);
  close(fd);
  return 0;
}

static double parse_seconds(const char* text) {
  const double seconds = atof(text);
  if (seconds <= 0) fprintf(stderr, "tcp_blast: bad SECONDS '%s' (want > 0)\n", text);
  return seconds;
}

int main(int argc, char** argv) {
  unsigned short port = 0;
  const char* mode = argc > 1 ? argv[1] : "";
  if (argc == 3 && strcmp(mode, "recv") == 0) {
    return parse_port(argv[2], &port) ? run_receiver(port) : 2;
  }
  if (argc == 5 && (strcmp(mode, "send") == 0 || strcmp(mode, "duplex") == 0)) {
    const double seconds = parse_seconds(argv[4]);
    if (seconds <= 0 || !parse_port(argv[3], &port)) return 2;
    if (mode[0] == 's') return run_sender(argv[2], port, seconds);
    const int fd = connect_with_retry(argv[2], port);
    return fd < 0 ? 1 : run_duplex(fd, seconds);
  }
  if (argc == 4 && strcmp(mode, "duplex-listen") == 0) {
    const double seconds = parse_seconds(argv[3]);
    if (seconds <= 0 || !parse_port(argv[2], &port)) return 2;
    const int fd = accept_one(port);
    return fd < 0 ? 1 : run_duplex(fd, seconds);
  }
  if (argc == 4 && strcmp(mode, "exchange-listen") == 0) {
    const size_t bytes = parse_bytes(argv[3]);
    if (bytes == 0 || !parse_port(argv[2], &port)) return 2;
    const int fd = accept_one(port);
    return fd < 0 ? 1 : run_exchange(fd, bytes);
  }
  if (argc == 5 && strcmp(mode, "exchange") == 0) {
    const size_t bytes = parse_bytes(argv[4]);
    if (bytes == 0 || !parse_port(argv[3], &port)) return 2;
    const int fd = connect_with_retry(argv[2], port);
    return fd < 0 ? 1 : run_exchange(fd, bytes);
  }
  fprintf(stderr,
          "usage: tcp_blast recv PORT | tcp_blast send HOST PORT SECONDS |\n"
          "       tcp_blast duplex-listen PORT SECONDS | tcp_blast duplex HOST PORT SECONDS |\n"
          "       tcp_blast exchange-listen PORT BYTES | tcp_blast exchange HOST PORT BYTES\n");
  return 2;
}
