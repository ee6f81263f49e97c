#include "core/response_cache.h"

#include <algorithm>

namespace hvdc::core {
namespace {

bool same_metadata(const Request& a, const Request& b) {
  return a.op_type == b.op_type && a.dtype == b.dtype && a.reduce_op == b.reduce_op &&
         a.root == b.root && a.device_type == b.device_type && a.device_id == b.device_id &&
         a.prescale == b.prescale && a.postscale == b.postscale && a.flags == b.flags &&
         a.shape == b.shape;
}

}  // namespace

ResponseCache::ResponseCache(size_t capacity) : slots_(capacity), replacement_(capacity) {
  for (uint32_t i = 0; i < capacity; ++i) free_.insert(i);
}

ResponseCache::Lookup ResponseCache::lookup(const Request& request, uint32_t* slot) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return Lookup::kMiss;
  *slot = it->second;
  return same_metadata(slots_[it->second].request, request) ? Lookup::kHit : Lookup::kInvalid;
}

bool ResponseCache::cacheable(const Response& response) {
  return response.kind == ResponseKind::kExecute && response.names.size() == 1 &&
         (response.op_type == OpType::kAllreduce || response.op_type == OpType::kAllgather);
}

bool ResponseCache::put(const Response& response, const Request& local) {
  if (slots_.empty()) return true;
  auto existing = by_name_.find(response.names[0]);
  if (existing != by_name_.end()) erase(existing->second);
  bool evicted = false;
  if (free_.empty()) {
    const uint32_t oldest = lru_.front();
    erase(static_cast<uint32_t>(replacement_.victim(oldest, slots_[oldest].last_use)));
    evicted = true;
  }
  const uint32_t slot = *free_.begin();
  free_.erase(free_.begin());
  slots_used_ = std::max(slots_used_, slot + 1);
  Slot& s = slots_[slot];
  s.used = true;
  s.response = response;
  s.request = local;
  s.lru = lru_.insert(lru_.end(), slot);
  s.last_use = replacement_.taken(slot);
  by_name_[response.names[0]] = slot;
  ++generation_;
  return !evicted;
}

void ResponseCache::touch(uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].used) return;
  slots_[slot].last_use = replacement_.touched(slot);
  lru_.splice(lru_.end(), lru_, slots_[slot].lru);
}

void ResponseCache::erase(uint32_t slot) {
  if (slot >= slots_.size() || !slots_[slot].used) return;
  Slot& s = slots_[slot];
  by_name_.erase(s.response.names[0]);
  lru_.erase(s.lru);
  replacement_.erased(slot);
  s = Slot();
  free_.insert(slot);
  ++generation_;
}

void set_bit(std::vector<uint64_t>& words, uint32_t bit) {
  if (bit / 64 >= words.size()) words.resize(bit / 64 + 1, 0);  // sized to the words in use
  words[bit / 64] |= uint64_t{1} << (bit % 64);
}

bool test_bit(const std::vector<uint64_t>& words, uint32_t bit) {
  return bit / 64 < words.size() && (words[bit / 64] >> (bit % 64)) & 1;
}

}  // namespace hvdc::core
