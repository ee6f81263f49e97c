// The lane on the boards (ops/lane.h). Each member posts on its own board: its signature, then
// its counter `lane_posted` raised to k. The decision lies in the first member's board, in one
// word that only grows: a member decides agreement k by swapping the word from "k - 1 decided"
// to "k run" or "k void", so exactly one decision stands, whoever races. A member that posted
// k and finds a later agreement decided knows k was void: a run needs every member's part in
// its op, so nobody passes a run agreement without this member.
#include <algorithm>
#include <cstring>

#include "ops/cpu/local/board.h"
#include "ops/cpu/local/board_slot.h"
#include "ops/cpu/reduce/average_lanes.h"

namespace hvdc::ops::cpu::local {

namespace {

constexpr uint64_t kRun = 1;
constexpr uint64_t kVoid = 2;

uint64_t agreement_of(uint64_t decided) {
  return decided >> 2;
}
uint64_t decision(uint64_t k, uint64_t verdict) {
  return (k << 2) | verdict;
}

}  // namespace

uint64_t Board::lane_next() {
  const uint64_t decided = slots_[0]->lane_decided.load(std::memory_order_acquire);
  lane_seen_ = std::max(lane_seen_, agreement_of(decided));
  return lane_seen_ + 1;
}

bool Board::lane_post(uint64_t k, const std::string& signature, const LaneBuffer& buffer) {
  if (signature.size() > kLaneSignatureBytes) return false;
  own_->lane_bytes = static_cast<uint32_t>(signature.size());
  std::memcpy(own_->lane_signature, signature.data(), signature.size());
  // An average of integers reduces a widened copy of its buffer (integer_average.cc), which
  // the description of the buffer does not name.
  const bool copied = needs_average_lanes(buffer.dtype, buffer.reduce_op, members_);
  const int area = copied ? -1 : described_area(buffer);
  // Every peer is done reading the last op's descriptions (it posted its outcome), so this
  // post may name the area that holds this op's description already.
  if (area >= 0) {
    if (area > 0) kept_.touch(area - 1);
    current_ = area;
    own_->desc_at = static_cast<uint32_t>(area);
  }
  own_->lane_described = area >= 0 ? k : 0;
  own_->lane_posted.store(k, std::memory_order_release);
  return true;
}

int Board::described_area(const LaneBuffer& buffer) const {
  if (buffer.data == nullptr || !any_described_) return -1;
  const uint64_t regions = memory::regions_generation();
  auto describes = [&](int a) {
    return same_buffers(areas_[a].described, buffer) && areas_[a].regions == regions;
  };
  if (describes(0)) return 0;
  // A kept area is found by the hash of its key: one that an op described as other buffers than
  // it was posted with (note_described) is then found for neither.
  const int s = kept_.find(key_hash(buffer), [&](int slot) { return describes(slot + 1); });
  return s >= 0 ? s + 1 : -1;
}

void Board::note_described(const LaneBuffer& buffer, uint64_t regions) {
  Area& area = areas_[current_];
  area.described = buffer;
  area.regions = regions;
  any_described_ = true;
  described_max_ = std::max(described_max_, buffer.bytes);
}

void Board::forget_described() {
  areas_[current_].described = LaneBuffer();
}

// Asked after every staged op: the scan over every area runs only where one names more.
void Board::forget_every_described(size_t over) {
  if (!any_described_ || described_max_ <= over) return;
  any_described_ = false;
  described_max_ = 0;
  for (Area& area : areas_) {
    if (area.described.bytes > over) area.described = LaneBuffer();
    if (area.described.data == nullptr) continue;
    any_described_ = true;
    described_max_ = std::max(described_max_, area.described.bytes);
  }
}

// The members' words are read after the verdict, which came after every member's post (each
// wrote its word before its post), and none posts again before this op is done everywhere.
bool Board::take_described_run() {
  const uint64_t k = lane_ran_;
  lane_ran_ = 0;
  if (k == 0) return false;
  for (const Slot* slot : slots_) {
    if (slot->lane_described != k) return false;
  }
  return true;
}

bool Board::lane_peer_posted(uint64_t k) const {
  for (int m = 0; m < members_; ++m) {
    if (m != index_ && slots_[m]->lane_posted.load(std::memory_order_acquire) >= k) return true;
  }
  return false;
}

LaneVerdict Board::lane_observe(uint64_t decided, uint64_t k) {
  const uint64_t at = agreement_of(decided);
  lane_seen_ = std::max(lane_seen_, at);
  if (at < k) return LaneVerdict::kUndecided;
  if (at > k) return LaneVerdict::kVoid;
  if ((decided & 3) != kRun) return LaneVerdict::kVoid;
  lane_ran_ = k;
  return LaneVerdict::kRun;
}

// Whether every member posted k with this member's signature. A peer's signature is read after
// its counter; should the peer rewrite it meanwhile, k was decided first, and the swap that would
// act on the reading fails.
bool Board::lane_signatures_equal(uint64_t k, bool* all_posted) const {
  *all_posted = false;
  bool equal = true;
  for (int m = 0; m < members_; ++m) {
    if (m == index_) continue;
    const Slot* peer = slots_[m];
    if (peer->lane_posted.load(std::memory_order_acquire) != k) return false;
    equal = equal && peer->lane_bytes == own_->lane_bytes &&
            std::memcmp(peer->lane_signature, own_->lane_signature, own_->lane_bytes) == 0;
  }
  *all_posted = true;
  return equal;
}

LaneVerdict Board::lane_decide(uint64_t k) {
  std::atomic<uint64_t>& word = slots_[0]->lane_decided;
  uint64_t decided = word.load();  // sequentially consistent: see lane_sleep()
  if (agreement_of(decided) >= k) return lane_observe(decided, k);
  bool all_posted = false;
  const bool equal = lane_signatures_equal(k, &all_posted);
  if (!all_posted || agreement_of(decided) + 1 != k) return LaneVerdict::kUndecided;
  const uint64_t mine = decision(k, equal ? kRun : kVoid);
  if (word.compare_exchange_strong(decided, mine)) decided = mine;
  return lane_observe(decided, k);
}

LaneVerdict Board::lane_withdraw(uint64_t k) {
  std::atomic<uint64_t>& word = slots_[0]->lane_decided;
  uint64_t decided = word.load(std::memory_order_acquire);
  while (agreement_of(decided) + 1 == k) {
    if (word.compare_exchange_weak(decided, decision(k, kVoid))) {
      decided = decision(k, kVoid);
      break;
    }
  }
  return lane_observe(decided, k);
}

// Sequentially consistent, as the swaps of the decision word are: a member that raises its flag
// and then reads the word undecided, and one that swaps the word and then reads the flags, cannot
// both miss the other's write.
void Board::lane_sleep(bool asleep) {
  own_->lane_asleep.store(asleep ? 1 : 0);
}

uint64_t Board::lane_sleepers() const {
  uint64_t mask = 0;
  for (int m = 0; m < members_ && m < 64; ++m) {
    if (m != index_ && slots_[m]->lane_asleep.load() != 0) mask |= uint64_t{1} << m;
  }
  return mask;
}

}  // namespace hvdc::ops::cpu::local
