#include "tools/hvdcrun/tagged_output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
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
  if (!out.empty()) write_all(out_fd_, out.data(), out.size());
}

void TaggedStream::finish() {
  if (partial_.empty()) return;
  const std::string out = prefix_ + partial_ + "\n";
  partial_.clear();
  write_all(out_fd_, out.data(), out.size());
}

bool write_all(int fd, const char* data, size_t bytes) {
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
