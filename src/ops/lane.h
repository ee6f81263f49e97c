// A lane: the members of a set on one host agree on their next op through shared memory instead
// of a negotiation round (core/lane/lane.h says which ops and when). Agreements are numbered on
// each board; each member posts the op it has for agreement k, and k is decided once, run or
// void, by whichever member first sees the answer: run when every member posted the same op,
// void when one posted another or withdrew. A voided op goes to the negotiation as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hvdc.h"

namespace hvdc::ops {

enum class LaneVerdict { kUndecided, kRun, kVoid };

// Sets of up to this many members take the lane: lane_sleepers() names them in one word.
constexpr int kLaneMaxMembers = 64;

// The buffers of the op a member posts, where it is one tensor (data: its input, out: its
// output, the same in place; data null otherwise): the board can then tell its peers that the
// description it holds already is that op's, so that the op needs no meeting for its
// description (board.h).
// The op's element type and reduce op come with it: the backend knows for which ops it reduces
// a copy instead (an average of integers, on the host), whose buffer no description names.
struct LaneBuffer {
  const void* data = nullptr;
  const void* out = nullptr;
  size_t bytes = 0;
  int32_t dtype = HVD_FLOAT32;
  int32_t reduce_op = HVD_OP_SUM;
};

// Whether a and b name the same buffers.
inline bool same_buffers(const LaneBuffer& a, const LaneBuffer& b) {
  return a.data == b.data && a.out == b.out && a.bytes == b.bytes;
}

class LaneBoard {
 public:
  virtual ~LaneBoard() = default;
  // The agreement this member posts next: one past the last decided one.
  virtual uint64_t lane_next() = 0;
  // Posts this member's op for agreement k, on `buffer`; false if its signature does not fit
  // the board.
  virtual bool lane_post(uint64_t k, const std::string& signature, const LaneBuffer& buffer) = 0;
  // Whether a peer posted for agreement k or a later one.
  virtual bool lane_peer_posted(uint64_t k) const = 0;
  // k's verdict, deciding it once every member posted k.
  virtual LaneVerdict lane_decide(uint64_t k) = 0;
  // Voids k unless it was decided already; its verdict.
  virtual LaneVerdict lane_withdraw(uint64_t k) = 0;
  // This member's engine thread sleeps (true) with its post held, or is awake again: whoever
  // decides then wakes it (through the transport; nothing on the board can). A member that
  // says so and then finds its post still undecided may sleep: the one who decides later reads
  // the flag after its decision.
  virtual void lane_sleep(bool asleep) = 0;
  // The members (bit m: member m) that said they sleep.
  virtual uint64_t lane_sleepers() const = 0;
};

}  // namespace hvdc::ops
