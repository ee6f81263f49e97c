// Whether an allreduce's output is still in the cache when the op writes it. A training step
// writes every gradient once per step: by the time one is written again, the step's other
// outputs (and the framework's own work) have pushed its lines out of the last-level cache, and
// a normal store reads each line from memory before writing it. Non-temporal stores skip that
// read, but where the lines are cached (a loop over one buffer, a benchmark) they would push
// them out for nothing. The reuse distance tells the two apart: the bytes of outputs this rank
// wrote since it last wrote the same buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu::local {

// The size of the largest cache the calling core's lines live in (sysfs), or 32 MiB where the
// system does not say.
size_t last_level_cache_bytes();

class OutputReuse {
 public:
  // An output counts as cold once this many bytes of outputs were written since it was last
  // written; 0 counts every output as cold (tests).
  explicit OutputReuse(size_t cold_bytes = last_level_cache_bytes()) : cold_bytes_(cold_bytes) {}
  void set_cold_bytes(size_t bytes) { cold_bytes_ = bytes; }

  // Whether most of out's bytes lie in pieces written before, with at least cold_bytes of
  // other outputs written after them. A piece never written before is not cold: nothing is
  // known of it.
  bool cold(const Pieces& out) const;
  // Records out's pieces as written now.
  void written(const Pieces& out);
  size_t tracked() const { return last_written_.size(); }

  // Buffers tracked at most; a framework has a few thousand gradients. Past it the record starts
  // afresh (a program that allocates a new output for every op).
  static constexpr size_t kMaxTracked = 16384;

 private:
  size_t cold_bytes_;
  uint64_t total_ = 0;                                      // bytes of outputs written so far
  std::unordered_map<const char*, uint64_t> last_written_;  // piece start -> total_ after it
};

}  // namespace hvdc::ops::cpu::local
