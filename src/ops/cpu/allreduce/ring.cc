#include <algorithm>
#include <vector>

#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/allreduce/phases.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {
namespace {

// Receive slots in flight per step: enough to keep the wire busy while one slot is reduced.
constexpr size_t kSlots = 4;

// Sends chunk `send` to the right neighbour and reduces chunk `recv` from the left into buf,
// segment by segment through kSlots scratch slots. Both sides cut a chunk into the same
// segments, because every member's view has the same layout.
Status reduce_scatter_step(Comm& comm, const Pieces& buf, const Chunks& ch, int send, int recv,
                           int step, const ReduceSpec& spec) {
  const int n = comm.size();
  const int left = (comm.index + n - 1) % n;
  const SegmentLimits limits = reduce_limits(comm, ch.esize);
  std::vector<Segment> out = split_segments(buf, ch.offset(send), ch.bytes(send), limits);
  std::vector<Segment> in = split_segments(buf, ch.offset(recv), ch.bytes(recv), limits);
  char* slots = comm.scratch_bytes(kSlots * limits.max_staged);
  place_staged(out, comm.staging_bytes(staged_bytes(out)));

  std::vector<transport::Request> sends;
  sends.reserve(out.size());
  HVDC_RETURN_IF_ERROR(post_sends(comm, buf, out, comm.members[(comm.index + 1) % n],
                                  comm.tag(comm.index, step), &sends));
  std::vector<transport::Request> recvs(kSlots);
  auto post = [&](size_t s) {
    return comm.transport->irecv(comm.members[left], comm.tag(left, step),
                                 slots + (s % kSlots) * limits.max_staged, in[s].bytes,
                                 &recvs[s % kSlots]);
  };
  for (size_t s = 0; s < std::min(kSlots, in.size()); ++s) HVDC_RETURN_IF_ERROR(post(s));
  for (size_t s = 0; s < in.size(); ++s) {
    HVDC_RETURN_IF_ERROR(comm.transport->wait(&recvs[s % kSlots], 1, comm.interrupt));
    const char* src = slots + (s % kSlots) * limits.max_staged;
    buf.for_each(in[s].offset, in[s].bytes, [&](char* dst, size_t bytes) {
      reduce(dst, dst, src, bytes / ch.esize, spec.dtype, spec.op);
      src += bytes;
    });
    if (s + kSlots < in.size()) HVDC_RETURN_IF_ERROR(post(s + kSlots));
  }
  return comm.transport->wait(sends.data(), sends.size(), comm.interrupt);
}

}  // namespace

Status allreduce_ring(Comm& comm, const Pieces& buf, const ReduceSpec& spec) {
  const int n = comm.size();
  const int me = comm.index;
  const Chunks ch = make_chunks(buf, n, common::dtype_size(spec.dtype));
  // After step s of the reduce-scatter, chunk (me - s - 1) holds s + 2 contributions; after n - 1
  // steps this rank owns chunk (me + 1), reduced over every member.
  for (int s = 0; s < n - 1; ++s) {
    HVDC_RETURN_IF_ERROR(
        reduce_scatter_step(comm, buf, ch, (me - s + n) % n, (me - s - 1 + n) % n, s, spec));
  }
  const int owned = (me + 1) % n;
  finish_reduction(buf, ch.offset(owned), ch.bytes(owned), spec);
  return allgather_phase(comm, buf, ch, 1, n - 1);
}

}  // namespace hvdc::ops::cpu
