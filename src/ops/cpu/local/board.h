// A member's notices to the other members of its set on this host, in shared memory that they
// map: the in-place allreduce's two exchanges (the buffer descriptions, then "my chunk is written
// everywhere" with the outcome) become a few stores and loads instead of messages through the
// transport. Each member posts only on its own board (its peers only count themselves there while
// they sleep on a counter), and its counters only grow: op k's notice is the counter reaching k. A
// member rewrites its description for op k + 1 only after every member said op k was written, which
// each says only after it read every description of op k; and its outcome only after every
// description of op k + 1 was posted, so each stays while it is read. The boards also carry the
// set's lane (ops/lane.h, board_lane.cc).
//
// An op agreed on the lane can skip the description exchange: its agreement already says that
// every member's input is ready (each posted only once its op was submitted) and that every
// member is done with the last op (each posts only with nothing else in flight). What remains
// is the descriptions, and a member whose board already holds the description it would post
// says so with its post (the same single buffer in place as an earlier op on the board, one
// window, nothing staged then or since, no region mapped or freed since: then describing it
// again yields the same bytes). Where every member said so, the op goes straight to its reduction.
// A member keeps the description of each single buffer reduced in place in an area of its own (up
// to kKeptDescriptions of them, given up as common/replacement.h says), so that a loop that
// alternates between tensors finds each one's description still posted; the post says which
// area holds it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/lru_slots.h"
#include "common/status.h"
#include "memory/peer_regions.h"
#include "memory/shared_regions.h"
#include "ops/lane.h"

namespace hvdc::ops::cpu {
struct Comm;
}

namespace hvdc::ops::cpu::local {

using common::Status;

// How many descriptions of single buffers in place a member keeps on its board (above), and
// how many descriptions and opened views of its ops it keeps besides (local_access.h). A miss
// costs: with 64 kept, 128 tensors of 4 KiB in turn (each op a miss) took 4.65 us per op against
// 2.80 for 64 (docs/performance.md). 1024, the response cache's own default capacity
// (HVDC_CACHE_CAPACITY), covers the parameters of ResNet-50 (161), BERT-large (~390) and
// EfficientNet-B7 (~710), each found through a hash (common/lru_slots.h); a loop over more keeps
// 1023 of them (common/replacement.h).
constexpr int kKeptDescriptions = 1024;

class Board : public LaneBoard {
 public:
  Board(int members, int index);
  ~Board();
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  // Maps this member's board; fails where shared memory cannot be had.
  Status create();
  // Where the peers find it (id 0 before create()).
  const memory::RegionRef& ref() const { return ref_; }
  // Maps member m's board, which process pid described with `ref`, for as long as `regions`
  // lives (its trim leaves it).
  Status open_peer(int m, pid_t pid, const memory::RegionRef& ref, memory::PeerRegions& regions);
  // Every peer's board mapped: the members may agree to use their boards.
  bool peers_open() const;

  // Whether a description of `bytes` fits: larger ones go through the transport.
  bool fits(size_t bytes) const;
  // The next op's number (the same on every member: they run the same ops in the same order).
  uint64_t next_op() { return ++op_; }
  uint64_t ops() const { return op_; }  // how many ran on the boards
  // Posts this member's description of `op`; `buffer` names the buffers of the single tensor
  // it describes (data null: none), which gives it an area of its own.
  void post_description(const std::string& desc, uint64_t op, const LaneBuffer& buffer);
  // Whether this member's board holds `desc` as the description of the op in progress.
  bool holds_description(const std::string& desc) const;
  void post_outcome(const Status& st, uint64_t op);
  // Waits until every peer posted its description (written false) or outcome of `op`.
  Status wait(Comm& comm, bool written, uint64_t op) const;
  const char* description(int m, size_t* bytes) const;
  // Member m's outcome of the op (ok, or its code and message).
  Status outcome(int m) const;

  // Set once every member found every peer's board open (agreed through the transport).
  bool ready = false;

  // What the description of the op in progress describes (note_described), or nothing that a
  // post can name (forget_described): set by every op on the board, for the area it used.
  void note_described(const LaneBuffer& buffer, uint64_t regions);
  void forget_described();
  // No area of this board names buffers of more than `over` bytes (after an op that some member
  // staged, the set's next op of more than a window is cut into windows; 0: none at all, as
  // every area that names buffers names some bytes).
  void forget_every_described(size_t over = 0);
  // Whether the op now running is the one the lane agreed on last, and every member posted it
  // as described already (above). Asked once per op: it then no longer holds.
  bool take_described_run();

  // The lane (board_lane.cc).
  uint64_t lane_next() override;
  bool lane_post(uint64_t k, const std::string& signature, const LaneBuffer& buffer) override;
  bool lane_peer_posted(uint64_t k) const override;
  LaneVerdict lane_decide(uint64_t k) override;
  LaneVerdict lane_withdraw(uint64_t k) override;
  void lane_sleep(bool asleep) override;
  uint64_t lane_sleepers() const override;

 private:
  struct Slot;
  // What a decision word `decided` says of agreement k, which this member posted or answers.
  LaneVerdict lane_observe(uint64_t decided, uint64_t k);
  bool lane_signatures_equal(uint64_t k, bool* all_posted) const;
  // The area whose description names `buffer` as described, or -1.
  int described_area(const LaneBuffer& buffer) const;
  // The area for a description of `buffer` (0 where it has none or it does not fit a kept one),
  // marked as used now.
  int area_for(const LaneBuffer& buffer, size_t bytes);
  static uint64_t key_hash(const LaneBuffer& buffer);
  bool area_holds(int area, const std::string& desc) const;
  int members_;
  int index_;
  Slot* own_ = nullptr;
  memory::RegionRef ref_;
  uint64_t op_ = 0;
  uint64_t lane_seen_ = 0;  // the last agreement seen decided
  uint64_t lane_ran_ = 0;   // the last agreement seen decided to run, until an op takes it
  // What each area of this member's board holds (0: the general one, a + 1: kept area a).
  struct Area {
    LaneBuffer key;        // the buffer whose description it was given for
    LaneBuffer described;  // data null: nothing a post can name
    uint64_t regions = 0;  // memory::regions_generation() when it was described
  };
  std::vector<Area> areas_;
  common::LruSlots kept_;       // kept area a + 1 by the hash of its key
  bool any_described_ = false;  // some area may name a buffer (none since forget_every_described)
  size_t described_max_ = 0;    // no area names buffers of more bytes
  int current_ = 0;             // the area of the op in progress
  std::vector<Slot*> slots_;    // by member index, this member's own included; null: not open
};

}  // namespace hvdc::ops::cpu::local
