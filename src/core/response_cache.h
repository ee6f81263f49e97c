// The response cache: responses of tensors negotiated before, kept so that the next time every
// rank submits the same tensor with the same metadata the ranks agree through one exchange of
// bit vectors (one bit per slot) instead of a round trip through the coordinator.
//
// Every rank applies the same puts, touches and erases in the same order (they happen while a
// round's responses are processed, and rounds are processed in the same order everywhere), so
// slot numbers and which entry goes when it is full (common/replacement.h: the least recently
// used, except that a loop over more tensors than it holds keeps all but one) agree on every
// rank without being sent.
#pragma once

#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/replacement.h"
#include "core/message.h"

namespace hvdc::core {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity);

  enum class Lookup { kMiss, kHit, kInvalid };
  // kHit: `request` matches the cached entry of its name (slot set); kInvalid: the name is
  // cached with other metadata (slot set); kMiss: not cached, or the cache is disabled.
  Lookup lookup(const Request& request, uint32_t* slot) const;

  // Whether a response may be cached: a successful allreduce or allgather.
  static bool cacheable(const Response& response);
  // Records a single-tensor response with this rank's request for it, replacing an entry of the
  // same name; evicts an entry when full (false then, else true).
  bool put(const Response& response, const Request& local);
  void touch(uint32_t slot);  // most recently used
  void erase(uint32_t slot);
  const Response& response(uint32_t slot) const { return slots_[slot].response; }
  bool used(uint32_t slot) const { return slot < slots_.size() && slots_[slot].used; }

  size_t capacity() const { return slots_.size(); }
  size_t words() const { return (slots_.size() + 63) / 64; }  // bit-vector length
  // The words that can hold a set bit: every slot ever used lies below slots_used_, which is the
  // same on every rank (so are the puts). A round's bit vectors need no more.
  size_t words_in_use() const { return (slots_used_ + 63) / 64; }
  size_t size() const { return by_name_.size(); }
  // Changes whenever an entry is added or removed (not when one is touched).
  uint64_t generation() const { return generation_; }

 private:
  struct Slot {
    bool used = false;
    Response response;
    Request request;
    std::list<uint32_t>::iterator lru;
    uint64_t last_use = 0;  // the replacement's stamp when last put or touched
  };

  std::vector<Slot> slots_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::list<uint32_t> lru_;  // front: least recently used
  std::set<uint32_t> free_;  // lowest first, so slot choice needs no communication
  common::Replacement replacement_;
  uint64_t generation_ = 0;
  uint32_t slots_used_ = 0;  // one past the highest slot ever used
};

// Bit-vector helpers for round messages.
void set_bit(std::vector<uint64_t>& words, uint32_t bit);
bool test_bit(const std::vector<uint64_t>& words, uint32_t bit);
// Calls fn(bit) for each set bit in ascending order, skipping empty words (a round touches a few
// of up to 2^20 slots).
template <typename Fn>
void for_each_set_bit(const std::vector<uint64_t>& words, Fn fn) {
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint64_t word = words[w]; word != 0; word &= word - 1) {
      fn(static_cast<uint32_t>(w * 64 + __builtin_ctzll(word)));
    }
  }
}

}  // namespace hvdc::core
