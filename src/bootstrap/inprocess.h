// In-process bootstrap: N threads of one process act as N ranks (unit tests run several engines
// in one process this way, with real UCX between them).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace hvdc::bootstrap {

class InProcessGroup : public std::enable_shared_from_this<InProcessGroup> {
 public:
  static std::shared_ptr<InProcessGroup> create(int size);
  // The bootstrap of one member; each rank's object is used by one thread at a time.
  std::unique_ptr<Bootstrap> member(int rank);

  int size() const { return size_; }
  // Collective helpers used by the members: every rank contributes, every rank reads the round.
  Status exchange(int rank, const void* in, size_t bytes, void* out, int root);

 private:
  explicit InProcessGroup(int size) : size_(size), slots_(size) {}

  int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::vector<char>> slots_;
  int arrived_ = 0;
  int departed_ = 0;
  uint64_t round_ = 0;
};

}  // namespace hvdc::bootstrap
