// One member's board as it lies in shared memory (board.cc, board_lane.cc): only the members of
// one set on one host, running this same build, map it.
#pragma once

#include <atomic>
#include <cstdint>

#include "ops/cpu/local/board.h"

namespace hvdc::ops::cpu::local {

// The most bytes of a lane signature (core/lane/lane.cc): an op whose signature is longer (a
// long name) is agreed through the negotiation.
constexpr size_t kLaneSignatureBytes = 448;

// A kept area (board.h) holds a description of up to this many bytes (one buffer's takes 144).
constexpr size_t kKeptDescriptionBytes = 248;

struct KeptDescription {
  uint64_t bytes = 0;
  char data[kKeptDescriptionBytes] = {0};
};

// The counters sit on cache lines of their own: a member spinning on a peer's `described` does
// not pull the line the peer writes its outcome into.
struct Board::Slot {
  alignas(64) std::atomic<uint64_t> described{0};  // the last op whose description `desc` holds
  std::atomic<uint32_t> described_sleepers{0};     // peers asleep on it (FlagWait::sleepers)
  alignas(64) std::atomic<uint64_t> written{0};    // the last op whose chunk it wrote everywhere
  std::atomic<uint32_t> written_sleepers{0};
  int32_t code = 0;  // that op's outcome here
  char message[244] = {0};
  // The lane's decisions, on the first member's board only: (k << 2) | verdict of the last
  // agreement decided. Every member compares and swaps it, so each is decided once.
  alignas(64) std::atomic<uint64_t> lane_decided{0};
  // The last agreement this member posted for, and the signature it posted.
  alignas(64) std::atomic<uint64_t> lane_posted{0};
  std::atomic<uint32_t> lane_asleep{0};  // its engine thread sleeps with its post held
  uint32_t lane_bytes = 0;
  // The agreement whose op the area that desc_at names already describes (board.h), written
  // before lane_posted.
  uint64_t lane_described = 0;
  char lane_signature[kLaneSignatureBytes] = {0};
  // Where the description of the op in progress lies: 0 in `desc`, a + 1 in kept[a]. Written
  // before `described` is raised, or with a post as described already before `lane_posted`.
  uint32_t desc_at = 0;
  alignas(64) KeptDescription kept[kKeptDescriptions];
  alignas(64) uint64_t desc_bytes = 0;
  char desc[1];  // up to kBoardBytes - offsetof(desc)
};

}  // namespace hvdc::ops::cpu::local
