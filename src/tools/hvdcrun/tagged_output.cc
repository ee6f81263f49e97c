#include "tools/hvdcrun/tagged_output.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace hvdc::hvdcrun {

std::string TaggedStream::prefix_for(int rank, bool is_stderr) {
  return "[1," + std::to_string(rank) + (is_stderr ? "]<stderr>:" : "]<stdout>:");
}

void TaggedStream::feed(const char* data, size_t bytes) {
  // Everything complete in this piece goes out in one write.
  std::string out;
  const char* end = data + bytes;
  while (data < end) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', end - data));
    if (newline == nullptr) {
      partial_.append(data, end);
      break;
    }
    out += prefix_;
    out += partial_;
    out.append(data, newline + 1);
    partial_.clear();
    data = newline + 1;
  }
  if (partial_.size() >= kMaxLine) {
    out += prefix_ + partial_ + "\n";
    partial_.clear();
  }
  if (!out.empty()) write_all(out_fd_, out.data(), out.size(), wait_);
}

void TaggedStream::finish() {
  if (partial_.empty()) return;
  const std::string out = prefix_ + partial_ + "\n";
  partial_.clear();
  write_all(out_fd_, out.data(), out.size(), wait_);
}

namespace {

// With a wait function hvdcrun must never block inside write(), where only a signal could
// interrupt it: it writes only once poll() says there is room, at most PIPE_BUF bytes at a time,
// which a pipe with room takes without blocking.
bool write_all_waiting(int fd, const char* data, size_t bytes, const WaitWritable& wait) {
  while (bytes > 0) {
    pollfd p = {fd, POLLOUT, 0};
    if (poll(&p, 1, 0) <= 0 || p.revents == 0) {
      if (!wait(fd)) return false;
      continue;
    }
    const ssize_t n = write(fd, data, std::min<size_t>(bytes, PIPE_BUF));
    if (n > 0) {
      data += n;
      bytes -= static_cast<size_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      return false;  // EPIPE (SIGPIPE is ignored) or another error: nobody reads any more
    }
  }
  return true;
}

}  // namespace

bool write_all(int fd, const char* data, size_t bytes, const WaitWritable& wait) {
  if (wait) return write_all_waiting(fd, data, bytes, wait);
  while (bytes > 0) {
    const ssize_t n = write(fd, data, bytes);
    if (n > 0) {
      data += n;
      bytes -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p = {fd, POLLOUT, 0};
      poll(&p, 1, -1);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;  // EPIPE (SIGPIPE is ignored) or another error: nobody reads any more
    }
  }
  return true;
}

}  // namespace hvdc::hvdcrun
