// A member's notices to the other members of its set on this host, in shared memory that they
// map: the in-place allreduce's two exchanges (the buffer descriptions, then "my chunk is written
// everywhere" with the outcome) become a few stores and loads instead of messages through the
// transport. Each member posts only on its own board (its peers only count themselves there while
// they sleep on a counter), and its counters only grow: op k's notice is the counter reaching k. A
// member rewrites its description for op k + 1 only after every member said op k was written, which
// each says only after it read every description of op k; and its outcome only after every
// description of op k + 1 was posted, so each stays while it is read. The boards also carry the
// set's lane (ops/lane.h, board_lane.cc).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "memory/peer_regions.h"
#include "memory/shared_regions.h"
#include "ops/lane.h"

namespace hvdc::ops::cpu {
struct Comm;
}

namespace hvdc::ops::cpu::local {

using common::Status;

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
  void post_description(const std::string& desc, uint64_t op);
  void post_outcome(const Status& st, uint64_t op);
  // Waits until every peer posted its description (written false) or outcome of `op`.
  Status wait(Comm& comm, bool written, uint64_t op) const;
  const char* description(int m, size_t* bytes) const;
  // Member m's outcome of the op (ok, or its code and message).
  Status outcome(int m) const;

  // Set once every member found every peer's board open (agreed through the transport).
  bool ready = false;

  // The lane (board_lane.cc).
  uint64_t lane_next() override;
  bool lane_post(uint64_t k, const std::string& signature) override;
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
  int members_;
  int index_;
  Slot* own_ = nullptr;
  memory::RegionRef ref_;
  uint64_t op_ = 0;
  uint64_t lane_seen_ = 0;    // the last agreement seen decided
  std::vector<Slot*> slots_;  // by member index, this member's own included; null: not open
};

}  // namespace hvdc::ops::cpu::local
