// How a collective moves one byte range of a Pieces view: as segments that are either sent or
// received in place (a run inside one tensor) or staged (small tensors packed together into a
// cache-sized block, so that a fused list of many small tensors does not become many tiny
// messages).
#pragma once

#include <cstddef>
#include <vector>

#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu {

struct Segment {
  size_t offset = 0;  // in the view
  size_t bytes = 0;
  char* addr = nullptr;  // in a piece, or in the staging area once placed
  bool staged = false;
};

struct SegmentLimits {
  size_t max_direct;  // longest in-place segment (a multiple of the element size)
  size_t max_staged;  // longest staged segment (a multiple of the element size)
  size_t min_direct;  // shorter runs are packed with their neighbours when there are any
};

// Splits [offset, offset + len) of buf into segments.
std::vector<Segment> split_segments(const Pieces& buf, size_t offset, size_t len,
                                    const SegmentLimits& limits);
// The same into *out, whose storage is kept (a warm op's split allocates nothing).
void split_segments(const Pieces& buf, size_t offset, size_t len, const SegmentLimits& limits,
                    std::vector<Segment>* out);
// Staging bytes the segments need.
size_t staged_bytes(const std::vector<Segment>& segs);
// Gives each staged segment its place in `area`; returns the first byte after them.
char* place_staged(std::vector<Segment>& segs, char* area);

}  // namespace hvdc::ops::cpu
