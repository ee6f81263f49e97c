#include "ops/cpu/allreduce/allreduce.h"

#include "common/dtype.h"
#include "ops/cpu/integer_average.h"
#include "ops/cpu/local/local_access.h"

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

// The cases allreduce() settles before any algorithm: one member, nothing to reduce, or an
// integer average (which widens first and then comes back here).
bool runs_before_algorithms(const Comm& comm, size_t bytes, const ReduceSpec& spec) {
  return (bytes > 0 && is_integer_average(spec)) || comm.size() == 1 || bytes == 0;
}

}  // namespace

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
  switch (transport_algorithm(comm, bytes, spec)) {
    case Algorithm::kDirect:
      return allreduce_direct(comm, buf, spec);
    case Algorithm::kOrdered:
      return allreduce_ordered(comm, buf, spec);
    case Algorithm::kRing:
      break;
  }
  return allreduce_ring(comm, buf, buf, spec);
}

Status allreduce(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec) {
  const size_t bytes = out.bytes();
  if (!runs_before_algorithms(comm, bytes, spec)) {
    if (comm.local != nullptr && bytes >= comm.local->min_bytes) {
      bool ran = false;
      Status st = allreduce_in_place_local(comm, in, out, spec, &ran);
      if (ran || !st.is_ok()) return st;
      comm.local = nullptr;  // refused: agreed on by all, so not again below
    }
    if (transport_algorithm(comm, bytes, spec) == Algorithm::kRing) {
      return allreduce_ring(comm, in, out, spec);
    }
  }
  in.copy_to(out);
  return allreduce(comm, out, spec);
}

}  // namespace hvdc::ops::cpu
