#include <algorithm>
#include <vector>

#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/allreduce/phases.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {
namespace {

// The inputs and the outputs: the same object in place, else two views of one layout.
struct Views {
  const Pieces& in;
  const Pieces& out;
};

// Points segments cut from the outputs' layout at the same bytes of `from`, staging those that
// are not contiguous there. The peer cuts its receives from its own outputs, so the messages
// must follow the outputs' layout whatever the inputs' pieces are.
void read_from(const Pieces& from, std::vector<Segment>* segs) {
  for (Segment& s : *segs) {
    if (s.staged) continue;
    s.addr = from.contiguous(s.offset, s.bytes);
    s.staged = s.addr == nullptr;
  }
}

// Sends chunk `send` of `from` to the right neighbour and reduces chunk `recv` from the left,
// out = in op received, segment by segment through messages_in_flight() scratch slots (enough to
// keep the wire busy while one is reduced). Both sides cut a chunk into the same segments, because
// every member's view has the same layout.
Status reduce_scatter_step(Comm& comm, const Views& v, const Pieces& from, const Chunks& ch,
                           int send, int recv, int step, const ReduceSpec& spec) {
  const int n = comm.size();
  const int left = (comm.index + n - 1) % n;
  const SegmentLimits limits = reduce_limits(comm, ch.esize);
  std::vector<Segment> out = split_segments(v.out, ch.offset(send), ch.bytes(send), limits);
  if (&from != &v.out) read_from(from, &out);
  std::vector<Segment> in = split_segments(v.out, ch.offset(recv), ch.bytes(recv), limits);
  const size_t slot_count = messages_in_flight(limits.max_staged);
  char* slots = comm.scratch_bytes(slot_count * limits.max_staged);
  place_staged(out, comm.staging_bytes(staged_bytes(out)));

  PacedSends sends(comm, from, out, comm.tag(comm.index, step), slot_count);
  HVDC_RETURN_IF_ERROR(sends.advance(0));
  std::vector<transport::Request> recvs(slot_count);
  auto post = [&](size_t s) {
    return comm.transport->irecv(comm.members[left], comm.tag(left, step),
                                 slots + (s % slot_count) * limits.max_staged, in[s].bytes,
                                 &recvs[s % slot_count]);
  };
  for (size_t s = 0; s < std::min(slot_count, in.size()); ++s) HVDC_RETURN_IF_ERROR(post(s));
  for (size_t s = 0; s < in.size(); ++s) {
    HVDC_RETURN_IF_ERROR(comm.transport->wait(&recvs[s % slot_count], 1, comm.interrupt));
    const char* src = slots + (s % slot_count) * limits.max_staged;
    v.out.for_each_with(v.in, in[s].offset, in[s].bytes, [&](char* dst, const char* own, size_t b) {
      reduce(dst, own, src, b / ch.esize, spec.dtype, spec.op);
      src += b;
    });
    if (s + slot_count < in.size()) HVDC_RETURN_IF_ERROR(post(s + slot_count));
    HVDC_RETURN_IF_ERROR(sends.advance(s + 1));
  }
  return sends.finish();
}

}  // namespace

Status reduce_scatter_phase(Comm& comm, const Pieces& in, const Pieces& out, const Chunks& ch,
                            const ReduceSpec& spec) {
  const int n = comm.size();
  const int me = comm.index;
  const Views v{in, out};
  // After step s, chunk (me - s - 1) holds s + 2 contributions; after n - 1 steps this rank owns
  // chunk (me + 1), reduced over every member. Step 0 sends this member's own input; every later
  // step sends the partial sum the step before wrote into out.
  for (int s = 0; s < n - 1; ++s) {
    HVDC_RETURN_IF_ERROR(reduce_scatter_step(comm, v, s == 0 ? in : out, ch, (me - s + n) % n,
                                             (me - s - 1 + n) % n, s, spec));
  }
  return Status::ok();
}

Status allreduce_ring(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec) {
  const int n = comm.size();
  const int me = comm.index;
  const Chunks ch = make_chunks(out, n, common::dtype_size(spec.dtype));
  // Out of place, every chunk of out is first written by a reduce or by the allgather, so the
  // input is never copied into the output.
  HVDC_RETURN_IF_ERROR(reduce_scatter_phase(comm, in, out, ch, spec));
  const int owned = (me + 1) % n;
  finish_reduction(out, ch.offset(owned), ch.bytes(owned), spec);
  return allgather_phase(comm, out, ch, 1, n - 1);
}

}  // namespace hvdc::ops::cpu
