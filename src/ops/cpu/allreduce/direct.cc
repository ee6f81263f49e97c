#include <cstring>
#include <vector>

#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {
namespace {

Status direct_contiguous(Comm& comm, char* buf, size_t count, const ReduceSpec& spec) {
  const int n = comm.size();
  const size_t bytes = count * common::dtype_size(spec.dtype);
  char* slots = comm.scratch_bytes(bytes * n);
  // Most groups are small: their requests live on the stack.
  constexpr int kStackMembers = 8;
  transport::Request stack_reqs[2 * (kStackMembers - 1)];
  std::vector<transport::Request> heap_reqs(n > kStackMembers ? 2 * (n - 1) : 0);
  transport::Request* reqs = n > kStackMembers ? heap_reqs.data() : stack_reqs;
  size_t r = 0;
  for (int m = 0; m < n; ++m) {
    if (m == comm.index) continue;
    HVDC_RETURN_IF_ERROR(comm.transport->irecv(comm.members[m], comm.tag(m, 0), slots + m * bytes,
                                               bytes, &reqs[r++]));
    HVDC_RETURN_IF_ERROR(
        comm.transport->isend(comm.members[m], comm.tag(comm.index, 0), buf, bytes, &reqs[r++]));
  }
  HVDC_RETURN_IF_ERROR(comm.transport->wait(reqs, r, comm.interrupt));
  // The same left-to-right order on every member gives the same bits everywhere. Members 0
  // and 1 read their own contribution from buf itself, since the first reduce consumes it
  // (reduce allows dst to alias a side); a later member's buf holds the running sum by its
  // turn, so it copies its contribution aside first.
  const bool own_aside = comm.index >= 2;
  if (own_aside) common::copy_bytes(slots + comm.index * bytes, buf, bytes);
  auto from = [&](int m) -> const char* {
    return m == comm.index && !own_aside ? buf : slots + m * bytes;
  };
  reduce_in_member_order(buf, n, from, count, spec);
  return Status::ok();
}

}  // namespace

Status allreduce_direct(Comm& comm, const Pieces& buf, const ReduceSpec& spec) {
  const size_t bytes = buf.bytes();
  const size_t count = bytes / common::dtype_size(spec.dtype);
  if (buf.count() == 1) return direct_contiguous(comm, buf.piece(0).data, count, spec);
  // Small by definition: packing the pieces costs less than a message per piece.
  char* packed = comm.staging_bytes(bytes);
  if (comm.trace) comm.trace("MEMCPY_IN_FUSION_BUFFER", true);
  buf.gather(0, bytes, packed);
  if (comm.trace) comm.trace("MEMCPY_IN_FUSION_BUFFER", false);
  HVDC_RETURN_IF_ERROR(direct_contiguous(comm, packed, count, spec));
  if (comm.trace) comm.trace("MEMCPY_OUT_FUSION_BUFFER", true);
  buf.scatter(0, bytes, packed);
  if (comm.trace) comm.trace("MEMCPY_OUT_FUSION_BUFFER", false);
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
