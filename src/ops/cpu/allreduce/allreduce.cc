#include "ops/cpu/allreduce/allreduce.h"

#include "common/dtype.h"
#include "ops/cpu/integer_average.h"
#include "ops/cpu/local/local_access.h"

namespace hvdc::ops::cpu {

Status allreduce(Comm& comm, const Pieces& buf, const ReduceSpec& spec) {
  const size_t bytes = buf.bytes();
  if (bytes > 0 && is_integer_average(spec)) return allreduce_integer_average(comm, buf, spec);
  if (comm.size() == 1 || bytes == 0) {
    finish_reduction(buf, 0, bytes, spec);
    return Status::ok();
  }
  if (comm.local != nullptr && bytes >= comm.local->min_bytes) {
    bool ran = false;
    Status st = allreduce_in_place_local(comm, buf, buf, spec, &ran);
    if (ran || !st.is_ok()) return st;
  }
  const size_t count = bytes / common::dtype_size(spec.dtype);
  // The ring needs at least one element per member to be worth its 2(n-1) steps.
  if (bytes <= comm.small_bytes || count < static_cast<size_t>(comm.size())) {
    return allreduce_direct(comm, buf, spec);
  }
  if (comm.deterministic) return allreduce_ordered(comm, buf, spec);
  return allreduce_ring(comm, buf, spec);
}

}  // namespace hvdc::ops::cpu
