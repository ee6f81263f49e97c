#include "common/lru_slots.h"

namespace hvdc::common {

LruSlots::LruSlots(int slots) : slots_(slots > 0 ? slots : 1), replacement_(slots_.size()) {
  // Twice as many buckets as slots, a power of two: chains of one or two slots.
  size_t buckets = 1;
  while (buckets < 2 * slots_.size()) buckets <<= 1;
  buckets_.assign(buckets, -1);
  bucket_mask_ = buckets - 1;
}

uint64_t LruSlots::mix(uint64_t h, uint64_t v) {
  // A combining step, then a multiply and a fold of the high half into the low: the bucket is
  // taken from the low bits, and pointers to aligned buffers differ mostly in the middle ones.
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

void LruSlots::touch(int s) {
  slots_[s].last_use = replacement_.touched(s);
  if (s == newest_) return;
  unlink_from_order(s);
  make_newest(s);
}

int LruSlots::take(uint64_t hash) {
  ++takes_;
  int s = -1;
  if (in_use_ < capacity()) {
    s = in_use_++;
  } else {
    s = static_cast<int>(replacement_.victim(oldest_, slots_[oldest_].last_use));
    unlink_from_bucket(s);
    unlink_from_order(s);
  }
  Slot& slot = slots_[s];
  slot.hash = hash;
  slot.last_use = replacement_.taken(s);
  int& head = buckets_[bucket_of(hash)];
  slot.next_in_bucket = head;
  head = s;
  make_newest(s);
  return s;
}

void LruSlots::unlink_from_bucket(int s) {
  int* link = &buckets_[bucket_of(slots_[s].hash)];
  while (*link != s) link = &slots_[*link].next_in_bucket;
  *link = slots_[s].next_in_bucket;
  slots_[s].next_in_bucket = -1;
}

void LruSlots::unlink_from_order(int s) {
  Slot& slot = slots_[s];
  (slot.newer >= 0 ? slots_[slot.newer].older : newest_) = slot.older;
  (slot.older >= 0 ? slots_[slot.older].newer : oldest_) = slot.newer;
  slot.newer = slot.older = -1;
}

void LruSlots::make_newest(int s) {
  Slot& slot = slots_[s];
  slot.older = newest_;
  slot.newer = -1;
  if (newest_ >= 0) slots_[newest_].newer = s;
  newest_ = s;
  if (oldest_ < 0) oldest_ = s;
}

}  // namespace hvdc::common
