// Integer AVERAGE over several members, exact (see reduce/average_lanes.h): each member widens
// its values to int64 lanes, the chosen algorithm sums the lanes (a wrapping int64 SUM, so any
// algorithm and any order give the same bits), and the sums are narrowed back to averages
// truncated toward zero, then multiplied by the postscale factor as any finished reduction is.
// allreduce() and reducescatter_ring() route such reductions here; other reductions never come.
#pragma once

#include <vector>

#include "ops/cpu/comm.h"
#include "ops/cpu/pieces.h"

namespace hvdc::ops::cpu {

// True when spec is an integer average that must go through the wide lanes.
bool is_integer_average(const ReduceSpec& spec);

// allreduce() of an integer average, in place over buf.
Status allreduce_integer_average(Comm& comm, const Pieces& buf, const ReduceSpec& spec);

// reducescatter_ring() of an integer average, with its contract (counts already checked).
Status reducescatter_integer_average(Comm& comm, const void* buf, const std::vector<size_t>& counts,
                                     void* out, const ReduceSpec& spec);

}  // namespace hvdc::ops::cpu
