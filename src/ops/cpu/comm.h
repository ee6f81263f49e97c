// What a host collective needs: the members (global ranks) of its process set, this rank's
// index among them, the transport, the op's sequence number (the same on every member, which
// makes tags unique per op), a reusable scratch area and the tuning knobs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/status.h"
#include "ops/cpu/pieces.h"
#include "transport/transport.h"

namespace hvdc::ops::cpu {
namespace local {
struct LocalAccess;
}

using common::Status;

struct Comm {
  transport::Transport* transport = nullptr;
  std::vector<int> members;  // global rank of each member
  int index = 0;             // this rank's position in members
  uint32_t context = 0;      // the process set's tag context (distinct among live sets)
  uint64_t seq = 0;
  // Across hosts, each member's host number, for the hierarchical allreduce; empty: not used.
  std::vector<int> hosts;
  transport::Interrupt interrupt;
  std::vector<char>* scratch = nullptr;
  // Set when every member runs on this host: the in-place path's state (local/local_access.h).
  local::LocalAccess* local = nullptr;
  std::vector<char>* staging = nullptr;  // packed segments; a per-op buffer when null
  size_t segment_bytes = 256 << 10;
  // A group across hosts may cut its messages smaller than those between ranks of one host:
  // this is the size for a sub-communicator within one host (hierarchical.cc).
  size_t host_segment_bytes = 256 << 10;
  // Set where segment_bytes is that cut (TCP between hosts): the allgather sends in segments too.
  bool pieces_across_hosts = false;
  size_t small_bytes = 64 << 10;
  // Reduce every element in member order, whatever the size, fusion and segment layout.
  bool deterministic = false;
  // An op agreed on the lane: in place among the ranks of one host whatever its size.
  bool lane = false;
  // Marks the start (true) and end (false) of a phase such as "MEMCPY_IN_FUSION_BUFFER" for
  // the timeline; may be empty.
  std::function<void(const char* phase, bool begin)> trace;

  int size() const { return static_cast<int>(members.size()); }
  // Tag of a message that member `from` sends in step `step` of this op.
  transport::Tag tag(int from, int step) const;
  // Scratch of at least `bytes`, grown on demand and kept for later ops.
  char* scratch_bytes(size_t bytes);
  char* staging_bytes(size_t bytes);

 private:
  std::vector<char> own_staging_;
};

// How to combine and finish a reduction: op on dtype, then divide by `divisor` (average) and
// multiply by `postscale`.
struct ReduceSpec {
  int32_t dtype = 0;
  int32_t op = 0;
  int64_t divisor = 1;
  double postscale = 1.0;
};

// Applies divisor and postscale to count elements in place.
void finish_reduction(void* buf, size_t count, const ReduceSpec& spec);
// The same over [offset, offset + len) bytes of a view.
void finish_reduction(const Pieces& buf, size_t offset, size_t len, const ReduceSpec& spec);

}  // namespace hvdc::ops::cpu
