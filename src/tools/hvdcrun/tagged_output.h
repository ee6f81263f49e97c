// One rank's stdout or stderr, passed on line by line with a prefix like Open MPI's --tag-output
// ("[1,3]<stdout>:"). Bytes arrive in arbitrary pieces; a line is written only once it is complete,
// so lines of different ranks never mix.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace hvdc::hvdcrun {

// Called when fd cannot take more output right now: waits until it can, doing whatever else
// must not wait meanwhile; false to drop the rest.
using WaitWritable = std::function<bool(int fd)>;

class TaggedStream {
 public:
  // "[1,<rank>]<stdout>:" or "[1,<rank>]<stderr>:"; 1 stands for Open MPI's job number.
  static std::string prefix_for(int rank, bool is_stderr);

  TaggedStream(int out_fd, std::string prefix, WaitWritable wait = {})
      : out_fd_(out_fd), prefix_(std::move(prefix)), wait_(std::move(wait)) {}

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
  WaitWritable wait_;
};

// Writes all bytes (retrying after EINTR and short writes). While the descriptor is full it
// waits through `wait`, if given (and then never blocks in write()), else in write() or poll().
// False when the reader is gone or `wait` gave up; the caller drops the output then.
bool write_all(int fd, const char* data, size_t bytes, const WaitWritable& wait = {});

}  // namespace hvdc::hvdcrun
