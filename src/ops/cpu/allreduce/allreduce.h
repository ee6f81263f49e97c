// Host allreduce, in place over a view of one or more buffers (a fused list of tensors). Every
// member ends with bit-identical results.
#pragma once

#include "ops/cpu/comm.h"
#include "ops/cpu/pieces.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {

// out = in(0) op in(1) op ... op in(n-1), left to right, then the divisor and postscale: the
// direct algorithm's order, the same on every member (so the same bits). out may be in(0) or
// in(1), not a later member's input (it holds the running sum by that member's turn).
template <class Input>
void reduce_in_member_order(char* out, int n, Input in, size_t count, const ReduceSpec& spec) {
  reduce(out, in(0), in(1), count, spec.dtype, spec.op);
  for (int m = 2; m < n; ++m) reduce(out, out, in(m), count, spec.dtype, spec.op);
  finish_reduction(out, count, spec);
}

// Picks the algorithm by size: direct up to comm.small_bytes; from comm.local->min_bytes on, among
// ranks of one host, in place; otherwise above small_bytes the ring (hierarchical where the
// members span hosts evenly), or with comm.deterministic the member-ordered reduce-scatter. An
// integer average runs the chosen algorithm over wide lanes (integer_average.h), so that it is
// exact.
Status allreduce(Comm& comm, const Pieces& buf, const ReduceSpec& spec);
// The same out of place: `in` and `out` are views of one layout whose bytes do not overlap. The
// ring and the in-place path read the inputs where they are; the other algorithms copy them into
// the outputs first.
Status allreduce(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec);

// Pipelined ring: reduce-scatter then allgather, reducing in cache-sized segments, from `in` into
// `out` (the same object in place). Which member starts an element's sum depends on where the
// element falls among the chunks.
Status allreduce_ring(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec);

// Across hosts with the same number of members on each (comm.hosts; not with comm.deterministic):
// a reduce-scatter within each host, a ring across hosts of each chunk, an allgather within each
// host. *ran false: it does not apply (decided the same way on every member, nothing sent), and
// the caller runs another algorithm.
Status allreduce_hierarchical(Comm& comm, const Pieces& in, const Pieces& out,
                              const ReduceSpec& spec, bool* ran);

// Member-ordered: member m collects chunk m from everyone and reduces ((x0 op x1) op x2) ...,
// segment by segment, then the chunks go round the ring. Results depend only on the member count.
Status allreduce_ordered(Comm& comm, const Pieces& buf, const ReduceSpec& spec);

// Among ranks of one host (comm.local set): reads the peers' buffers in place (local/peer_view.h)
// and reduces chunk m on member m, from `in` (the same object as `out` in place, else a view of
// the same layout) into `out`, a window of LocalAccess::window_bytes at a time (the same windows
// on every member: they depend on the op's size alone). *done is the bytes reduced from the
// start: all of them, or those before the first window the members may not read each other's
// memory for (agreed on by all; logged once), where the caller runs another algorithm on the
// rest. Results depend only on the member count, as with allreduce_ordered.
Status allreduce_in_place_local(Comm& comm, const Pieces& in, const Pieces& out,
                                const ReduceSpec& spec, size_t* done);

// Low latency for small messages: every member sends its data to every other, and each member
// reduces all contributions in member order (so all results agree bit for bit).
Status allreduce_direct(Comm& comm, const Pieces& buf, const ReduceSpec& spec);

// Without messages: inputs[t][m] is member m's input of tensor t, which came with the round that
// agreed on the op; each member reduces them in member order into outs[t] (the direct
// algorithm's order and bits).
Status allreduce_of_inputs(Comm& comm, const std::vector<std::vector<const char*>>& inputs,
                           const std::vector<Piece>& outs, const ReduceSpec& spec);

}  // namespace hvdc::ops::cpu
