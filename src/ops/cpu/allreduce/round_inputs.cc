// Allreduce of inputs that came with the negotiation round (core/negotiation/round_inputs.cc):
// every member's input of each tensor is already here, so each member reduces them in member
// order, as the direct algorithm does, and sends nothing.
#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {

using common::make_error;

Status allreduce_of_inputs(Comm& comm, const std::vector<std::vector<const char*>>& inputs,
                           const std::vector<Piece>& outs, const ReduceSpec& spec) {
  const int n = comm.size();
  if (inputs.size() != outs.size() || n < 2) {
    return make_error(HVD_ERR_INTERNAL, "the round carried inputs of %zu tensors for %zu outputs",
                      inputs.size(), outs.size());
  }
  const size_t esize = common::dtype_size(spec.dtype);
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
    // reduce() lets dst alias either side, so an output that is this member's input serves as
    // members 0 and 1; a later member's output holds the running sum by its turn, so it reads
    // its own input from a copy.
    const char* own = from[comm.index];
    if (comm.index >= 2 && own < out + bytes && out < own + bytes) {
      char* aside = comm.scratch_bytes(bytes);
      std::memcpy(aside, own, bytes);
      own = aside;
    }
    auto input = [&](int m) { return m == comm.index ? own : from[m]; };
    reduce(out, input(0), input(1), count, spec.dtype, spec.op);
    for (int m = 2; m < n; ++m) reduce(out, out, input(m), count, spec.dtype, spec.op);
    finish_reduction(out, count, spec);
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
