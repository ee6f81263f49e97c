// 64-bit tag layout: kind (4 bits) | source rank (20 bits) | payload (40 bits). Receives match the
// source through the tag because UCX tag receives are posted on the worker, not an endpoint.
#pragma once

#include <cstdint>

namespace hvdc::transport {

using Tag = uint64_t;

enum class TagKind : uint64_t {
  kRequestList = 1,  // rank -> coordinator: tensors ready here
  kRound = 2,        // every rank -> every rank: one round of agreement on what to execute
  kData = 3,         // collective payloads
  kTerminate = 4,    // abort or shutdown notice to every peer
  kStall = 5,        // a timed-out rank to every peer: whom it waited for (stall agreement)
  kTreeRound = 6,    // rounds of agreement at scale: up and down a tree of the ranks
  kDevice = 7,       // device communicator setup: GPU identities and NCCL unique ids
  kLaneWake = 8,     // a rank that decided on a set's lane -> a member asleep with its post
};

constexpr int kTagKindShift = 60;
constexpr int kTagSourceShift = 40;
constexpr Tag kTagKindMask = Tag{0xF} << kTagKindShift;
constexpr Tag kTagSourceMask = Tag{0xFFFFF} << kTagSourceShift;
constexpr Tag kTagPayloadMask = (Tag{1} << kTagSourceShift) - 1;
constexpr int kMaxRanks = 1 << 20;

constexpr Tag make_tag(TagKind kind, int source, uint64_t payload) {
  return (static_cast<Tag>(kind) << kTagKindShift) | (static_cast<Tag>(source) << kTagSourceShift) |
         (payload & kTagPayloadMask);
}
constexpr int tag_source(Tag tag) {
  return static_cast<int>((tag & kTagSourceMask) >> kTagSourceShift);
}

}  // namespace hvdc::transport
