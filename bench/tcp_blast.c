// tcp_blast: the raw TCP bandwidth of a link, one stream, measured at the receiver. compare.sh
// runs it across the multihost suite's veth pair (one way, and both ways at once) in the same
// run as the allreduces, so the link's limit is measured, never quoted.
//   tcp_blast recv PORT              accepts one connection, reads to EOF, prints one JSON line:
//                                    {"bytes": N, "seconds": S, "gbps": G} (from the first byte)
//   tcp_blast send HOST PORT SECONDS connects (retrying for 10 s while the receiver starts) and
//                                    sends for SECONDS, then closes
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

static int run_receiver(unsigned short port) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(listener, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(listener, 1) != 0) {
    fprintf(stderr, "tcp_blast: cannot listen on port %u: %s\n", port, strerror(errno));
    return 1;
  }
  const int conn = accept(listener, NULL, NULL);
  if (conn < 0) {
    fprintf(stderr, "tcp_blast: accept failed: %s\n", strerror(errno));
    return 1;
  }
  char* buf = malloc(kChunk);
  double first = 0, last = 0;
  unsigned long long bytes = 0;
  for (;;) {
    const ssize_t got = recv(conn, buf, kChunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fprintf(stderr, "tcp_blast: recv failed: %s\n", strerror(errno));
      return 1;
    }
    if (got == 0) break;
    last = now_s();
    if (bytes == 0) first = last;
    bytes += (unsigned long long)got;
  }
  const double seconds = last - first;
  printf("{\"bytes\": %llu, \"seconds\": %.6f, \"gbps\": %.4f}\n", bytes, seconds,
         seconds > 0 ? bytes / seconds / 1e9 : 0.0);
  free(buf);
  close(conn);
  close(listener);
  return bytes > 0 ? 0 : 1;
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

int main(int argc, char** argv) {
  unsigned short port = 0;
  if (argc == 3 && strcmp(argv[1], "recv") == 0) {
    return parse_port(argv[2], &port) ? run_receiver(port) : 2;
  }
  if (argc == 5 && strcmp(argv[1], "send") == 0) {
    const double seconds = atof(argv[4]);
    if (seconds <= 0) {
      fprintf(stderr, "tcp_blast: bad SECONDS '%s' (want > 0)\n", argv[4]);
      return 2;
    }
    return parse_port(argv[3], &port) ? run_sender(argv[2], port, seconds) : 2;
  }
  fprintf(stderr, "usage: tcp_blast recv PORT | tcp_blast send HOST PORT SECONDS\n");
  return 2;
}
