#include "ops/cpu/allreduce/allreduce.h"

#include "common/dtype.h"
#include "ops/cpu/integer_average.h"
#include "ops/cpu/local/local_access.h"
#include "ops/lane.h"

namespace hvdc::ops::cpu {
namespace {

// The algorithms that run on the transport, chosen the same way on every member.
enum class Algorithm { kDirect, kOrdered, kRing };

Algorithm transport_algorithm(const Comm& comm, size_t bytes, const ReduceSpec& spec) {
  const size_t count = bytes / common::dtype_size(spec.dtype);
  // The ring needs at least one element per member to be worth its 2(n-1) steps.
  if (bytes <= comm.small_bytes || count < static_cast<size_t>(comm.size())) {
    return Algorithm::kDirect;
  }
  return comm.deterministic ? Algorithm::kOrdered : Algorithm::kRing;
}

// The algorithms on the transport, and the cases that need none.
Status allreduce_elsewhere(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec,
                           bool integer_average, bool settled) {
  const Algorithm algorithm = transport_algorithm(comm, out.bytes(), spec);
  if (!settled && algorithm == Algorithm::kRing) {
    bool ran = false;
    const Status st = allreduce_hierarchical(comm, in, out, spec, &ran);
    return ran ? st : allreduce_ring(comm, in, out, spec);
  }
  // The rest work in place over the outputs.
  in.copy_to(out);
  if (integer_average) return allreduce_integer_average(comm, out, spec);
  if (settled) {
    finish_reduction(out, 0, out.bytes(), spec);
    return Status::ok();
  }
  if (algorithm == Algorithm::kOrdered) return allreduce_ordered(comm, out, spec);
  return allreduce_direct(comm, out, spec);
}

}  // namespace

Status allreduce(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec) {
  const size_t bytes = out.bytes();
  const bool integer_average = bytes > 0 && is_integer_average(spec);
  // One member, nothing to reduce, or an integer average (it widens first and comes back here)
  // need no algorithm of their own.
  const bool settled = integer_average || comm.size() == 1 || bytes == 0;
  // Below HVDC_LOCAL_MIN_BYTES the transport's direct algorithm, except for an op agreed on the
  // lane (its members meet on their board for it anyway, and every one knows it came that way)
  // and the first allreduce of a set the lane can take, which opens that board: every member
  // runs the same first op of a set, so all choose alike.
  const bool small = comm.local != nullptr && bytes < comm.local->min_bytes && !comm.lane &&
                     (!comm.local->lane || comm.size() > kLaneMaxMembers ||
                      comm.local->sets[comm.members].first_op_done);
  if (settled || comm.local == nullptr || small) {
    return allreduce_elsewhere(comm, in, out, spec, integer_average, settled);
  }
  size_t done = 0;
  HVDC_RETURN_IF_ERROR(allreduce_in_place_local(comm, in, out, spec, &done));
  if (done == bytes) return Status::ok();
  if (done == 0) return allreduce_elsewhere(comm, in, out, spec, false, false);
  return allreduce_elsewhere(comm, in.slice(done, bytes - done), out.slice(done, bytes - done),
                             spec, false, false);
}

Status allreduce(Comm& comm, const Pieces& buf, const ReduceSpec& spec) {
  return allreduce(comm, buf, buf, spec);
}

}  // namespace hvdc::ops::cpu
