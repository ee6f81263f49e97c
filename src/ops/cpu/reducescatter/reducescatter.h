// Host reduce-scatter over blocks of different sizes: each member ends with the reduction over all
// members of its own block.
#pragma once

#include <cstddef>
#include <vector>

#include "ops/cpu/comm.h"

namespace hvdc::ops::cpu {

// Reduces `buf` (sum(counts) elements, the same layout on every member: member i's block is
// counts[i] elements starting at element sum(counts[0..i))) over all members with spec (dtype,
// op); this member's block of the result, finished with finish_reduction (divisor, postscale), is
// written to `out` (counts[comm.index] elements). `buf` is clobbered: it is the accumulation area.
// Blocks may be uneven or empty. `out` may be this member's block of `buf` itself; otherwise the
// two must not overlap. An integer average reduces wide lanes instead (integer_average.h).
//
// Pipelined ring: n - 1 steps, each reducing one block in comm.segment_bytes pieces, so that after
// the last step this member holds the full reduction of its own block.
Status reducescatter_ring(Comm& comm, void* buf, const std::vector<size_t>& counts, void* out,
                          const ReduceSpec& spec);

}  // namespace hvdc::ops::cpu
