// Which entry a full cache gives up: the policy of the caches that training loops use in turn
// (common/lru_slots.h, core/response_cache.h).
//
// Least recently used alone is the worst case of a loop over more entries than slots: the one
// given up is always the one the loop needs next, so every use misses. Where the least recently
// used entry was used within the last kLiveUsesPerSlot uses per slot, everything kept is still
// in use, and a new entry takes the slot of the last one taken for something new instead, as
// long as that one was not used again since. A loop over n > slots entries then finds slots - 1
// of them on each pass (up to n of about four times the slots); entries unused for that long
// are given up least recently used first, so a cache whose entries all changed keeps the new
// ones after that many uses. Nothing but the order of calls decides, so ranks or members that
// make the same calls keep the same entries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvdc::common {

class Replacement {
 public:
  explicit Replacement(size_t slots) : live_uses_(kLiveUsesPerSlot * slots) {}

  // Each returns the use's stamp, for the caller to keep with the slot.
  uint64_t touched(int64_t slot) {
    if (slot == fresh_) fresh_ = -1;
    return ++uses_;
  }
  uint64_t taken(int64_t slot) {
    fresh_ = slot;
    return ++uses_;
  }
  void erased(int64_t slot) {
    if (slot == fresh_) fresh_ = -1;
  }
  // The slot to give up once every slot holds something, where `oldest` is the least recently
  // used, stamped `oldest_used` when last used.
  int64_t victim(int64_t oldest, uint64_t oldest_used) const {
    return fresh_ >= 0 && uses_ - oldest_used <= live_uses_ ? fresh_ : oldest;
  }

 private:
  // Four passes of a loop that fills every slot.
  static constexpr uint64_t kLiveUsesPerSlot = 4;
  uint64_t live_uses_;
  uint64_t uses_ = 0;
  int64_t fresh_ = -1;  // the slot taken last, while not touched since
};

}  // namespace hvdc::common
