// One rank's stdout or stderr, passed on line by line with a prefix like Open MPI's --tag-output
// ("[1,3]<stdout>:"). Bytes arrive in arbitrary pieces; a line is written only once it is complete,
// so lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace hvdc::hvdcrun {

class TaggedStream {
 public:
  // "[1,<rank>]<stdout>:" or "[1,<rank>]<stderr>:"; 1 stands for Open MPI's job number.
  static std::string prefix_for(int rank, bool is_stderr);

  TaggedStream(int out_fd, std::string prefix) : out_fd_(out_fd), prefix_(std::move(prefix)) {}

  // Writes every line that `data` completes; keeps the rest for later.
  void feed(const char* data, size_t bytes);
  // At end of stream: writes a last line that has no newline, adding one.
  void finish();

 private:
  // A line longer than this is written in pieces, each with its own prefix, so that a rank that
  // never prints a newline cannot make hvdcrun hold unbounded memory.
  static constexpr size_t kMaxLine = 1 << 20;

  int out_fd_;
  std::string prefix_;
  std::string partial_;  // the started, incomplete line
};

// Writes all bytes (retrying after EINTR and short writes, waiting while the descriptor is
// non-blocking and full). False when the reader is gone; the caller drops the output then.
bool write_all(int fd, const char* data, size_t bytes);

}  // namespace hvdc::hvdcrun
