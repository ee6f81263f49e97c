// A fixed number of slots, found by a hash of what each holds and given up least recently used
// first, except that a loop over more entries than slots keeps all but one (common/replacement.h).
// The in-place allreduce keeps descriptions and opened views of hundreds of tensors this way
// (ops/cpu/local): a loop over a model's parameters in turn finds each one's entry in a few
// loads, where a scan over every kept entry took longer than the op it saved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/replacement.h"

namespace hvdc::common {

class LruSlots {
 public:
  explicit LruSlots(int slots);

  int capacity() const { return static_cast<int>(slots_.size()); }
  // How many slots were ever taken (each of 0 .. in_use() - 1 holds something).
  int in_use() const { return in_use_; }
  // How many take() calls there were: each is a use that found nothing.
  uint64_t takes() const { return takes_; }

  // The slot taken for `hash` for which holds(slot) is true, or -1. Only slots taken for the
  // same hash are asked, the most recently taken first.
  template <typename Holds>
  int find(uint64_t hash, Holds holds) const {
    for (int s = buckets_[bucket_of(hash)]; s >= 0; s = slots_[s].next_in_bucket) {
      if (slots_[s].hash == hash && holds(s)) return s;
    }
    return -1;
  }
  // Marks slot s, one that find() or take() returned, as used now.
  void touch(int s);
  // A slot for something new, found by `hash` from now on: one never taken while any is left,
  // else the one the policy gives up (what it held goes). It is marked as used now.
  int take(uint64_t hash);

  // Mixes v into the hash h (for keys of several words).
  static uint64_t mix(uint64_t h, uint64_t v);

 private:
  struct Slot {
    uint64_t hash = 0;
    int next_in_bucket = -1;
    int newer = -1;         // towards the most recently used
    int older = -1;         // towards the least recently used
    uint64_t last_use = 0;  // the replacement's stamp when last taken or touched
  };
  size_t bucket_of(uint64_t hash) const { return static_cast<size_t>(hash) & bucket_mask_; }
  void unlink_from_bucket(int s);
  void unlink_from_order(int s);
  void make_newest(int s);

  std::vector<Slot> slots_;
  std::vector<int> buckets_;  // the first slot of each bucket's chain, -1: none
  size_t bucket_mask_ = 0;
  int in_use_ = 0;
  int newest_ = -1;
  int oldest_ = -1;
  Replacement replacement_;
  uint64_t takes_ = 0;
};

}  // namespace hvdc::common
