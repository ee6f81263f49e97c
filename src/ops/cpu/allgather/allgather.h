// Host allgather over blocks of different sizes: member m's block (block_bytes[m] bytes) lands
// at its offset in `out` on every member. This member's own block must already be in place.
#pragma once

#include <vector>

#include "ops/cpu/comm.h"

namespace hvdc::ops::cpu {

// Ring: n - 1 steps, each passing the block received in the step before to the right.
Status allgather_ring(Comm& comm, char* out, const std::vector<size_t>& block_bytes);

}  // namespace hvdc::ops::cpu
