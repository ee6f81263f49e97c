#include "ops/cpu/allreduce/allreduce.h"

#include "common/dtype.h"

namespace hvdc::ops::cpu {

Status allreduce(Comm& comm, void* buf, size_t count, const ReduceSpec& spec) {
  if (comm.size() == 1 || count == 0) {
    finish_reduction(buf, count, spec);
    return Status::ok();
  }
  const size_t bytes = count * common::dtype_size(spec.dtype);
  // The ring needs at least one element per member to be worth its 2(n-1) steps.
  if (bytes <= comm.small_bytes || count < static_cast<size_t>(comm.size())) {
    return allreduce_direct(comm, buf, count, spec);
  }
  return allreduce_ring(comm, buf, count, spec);
}

}  // namespace hvdc::ops::cpu
