#include "ops/cpu/integer_average.h"

#include "common/dtype.h"
#include "hvdc.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/reduce/average_lanes.h"
#include "ops/cpu/reducescatter/reducescatter.h"

namespace hvdc::ops::cpu {
namespace {

// The lanes are summed plainly: no divisor, no postscale (those apply to the narrowed result).
ReduceSpec lane_sum() {
  ReduceSpec spec;
  spec.dtype = HVD_INT64;
  spec.op = HVD_OP_SUM;
  return spec;
}

// What is left of spec once the division is done: the postscale factor alone.
ReduceSpec postscale_only(const ReduceSpec& spec) {
  ReduceSpec rest = spec;
  rest.divisor = 1;
  return rest;
}

}  // namespace

bool is_integer_average(const ReduceSpec& spec) {
  return needs_average_lanes(spec.dtype, spec.op, spec.divisor);
}

Status allreduce_integer_average(Comm& comm, const Pieces& buf, const ReduceSpec& spec) {
  const size_t esize = common::dtype_size(spec.dtype);
  const size_t lanes = average_lanes(spec.dtype);
  std::vector<int64_t> wide(buf.bytes() / esize * lanes);
  size_t at = 0;  // element index
  buf.for_each(0, buf.bytes(), [&](char* p, size_t n) {
    widen_for_average(wide.data() + at * lanes, p, n / esize, spec.dtype, spec.divisor);
    at += n / esize;
  });
  HVDC_RETURN_IF_ERROR(
      allreduce(comm, Pieces(wide.data(), wide.size() * sizeof(int64_t)), lane_sum()));
  at = 0;
  buf.for_each(0, buf.bytes(), [&](char* p, size_t n) {
    narrow_average(p, wide.data() + at * lanes, n / esize, spec.dtype, spec.divisor);
    at += n / esize;
  });
  finish_reduction(buf, 0, buf.bytes(), postscale_only(spec));
  return Status::ok();
}

Status reducescatter_integer_average(Comm& comm, const void* buf, const std::vector<size_t>& counts,
                                     void* out, const ReduceSpec& spec) {
  const size_t lanes = average_lanes(spec.dtype);
  size_t total = 0, first = 0;  // elements in all blocks, and before this member's
  std::vector<size_t> wide_counts;
  for (size_t m = 0; m < counts.size(); ++m) {
    if (m == static_cast<size_t>(comm.index)) first = total;
    total += counts[m];
    wide_counts.push_back(counts[m] * lanes);
  }
  std::vector<int64_t> wide(total * lanes);
  widen_for_average(wide.data(), buf, total, spec.dtype, spec.divisor);
  int64_t* mine = wide.data() + first * lanes;
  HVDC_RETURN_IF_ERROR(reducescatter_ring(comm, wide.data(), wide_counts, mine, lane_sum()));
  const size_t count = counts[comm.index];
  narrow_average(out, mine, count, spec.dtype, spec.divisor);
  finish_reduction(out, count, postscale_only(spec));
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
