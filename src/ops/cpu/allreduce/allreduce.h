// Host allreduce, in place on buf. Every member ends with bit-identical results.
#pragma once

#include "ops/cpu/comm.h"

namespace hvdc::ops::cpu {

// Picks the algorithm by size: direct up to comm.small_bytes, the ring above.
Status allreduce(Comm& comm, void* buf, size_t count, const ReduceSpec& spec);

// Pipelined ring: reduce-scatter then allgather, reducing in cache-sized segments.
Status allreduce_ring(Comm& comm, void* buf, size_t count, const ReduceSpec& spec);

// Low latency for small messages: every member sends its data to every other, and each member
// reduces all contributions in member order (so all results agree bit for bit).
Status allreduce_direct(Comm& comm, void* buf, size_t count, const ReduceSpec& spec);

}  // namespace hvdc::ops::cpu
