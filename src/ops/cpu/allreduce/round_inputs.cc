// Allreduce of inputs that came with the negotiation round (core/negotiation/round_inputs.cc):
// every member's input of each tensor is already here, so each member reduces them in member
// order, as the direct algorithm does, and sends nothing.
#include <cstdint>
#include <cstring>

#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {

using common::make_error;

namespace {

// Copies aside the inputs the kernels cannot read where they are: one that is not aligned to its
// element (an input inside a round message follows inputs of other sizes), and this member's own
// input when the output is that input and members before it write the running sum there first.
// reduce() lets dst alias either side, so members 0 and 1 read their own input in place.
void set_aside(Comm& comm, std::vector<const char*>& in, const char* out, size_t bytes,
               size_t esize) {
  char* scratch = nullptr;
  for (size_t m = 0; m < in.size(); ++m) {
    const bool misaligned = reinterpret_cast<uintptr_t>(in[m]) % esize != 0;
    const bool overwritten =
        static_cast<int>(m) == comm.index && m >= 2 && in[m] < out + bytes && out < in[m] + bytes;
    if (!misaligned && !overwritten) continue;
    // Each member's slot in one buffer, aligned to the element as the buffer is.
    if (scratch == nullptr) scratch = comm.scratch_bytes(bytes * in.size());
    common::copy_bytes(scratch + m * bytes, in[m], bytes);
    in[m] = scratch + m * bytes;
  }
}

}  // namespace

Status allreduce_of_inputs(Comm& comm, const std::vector<std::vector<const char*>>& inputs,
                           const std::vector<Piece>& outs, const ReduceSpec& spec) {
  const int n = comm.size();
  if (inputs.size() != outs.size() || n < 2) {
    return make_error(HVD_ERR_INTERNAL, "the round carried inputs of %zu tensors for %zu outputs",
                      inputs.size(), outs.size());
  }
  const size_t esize = common::dtype_size(spec.dtype);
  std::vector<const char*> in;  // one tensor's, with the copies set aside
  for (size_t t = 0; t < outs.size(); ++t) {
    const std::vector<const char*>& from = inputs[t];
    if (from.size() != static_cast<size_t>(n)) {
      return make_error(HVD_ERR_INTERNAL, "the round carried %zu inputs for %d members",
                        from.size(), n);
    }
    char* out = outs[t].data;
    const size_t bytes = outs[t].bytes;
    const size_t count = bytes / esize;
    if (count == 0) continue;
    in.assign(from.begin(), from.end());
    set_aside(comm, in, out, bytes, esize);
    reduce_in_member_order(
        out, n, [&](int m) { return in[m]; }, count, spec);
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
