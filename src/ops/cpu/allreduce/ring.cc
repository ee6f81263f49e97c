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

// Between hosts over TCP (comm.pieces_across_hosts) the ring's last reduce-scatter step runs its
// first allgather step too: each segment of the owned chunk is finished and sent on as soon as it
// is reduced, rather than after the whole chunk. The link then carries one stream each way
// instead of two with a pause between them (at np 2 the whole op is one step).
class PassOn {
 public:
  PassOn(Comm& comm, const Pieces& buf, const Chunks& ch, int owned, int step,
         const ReduceSpec& spec)
      : buf_(buf),
        spec_(spec),
        ag_(comm, buf, ch, owned, (owned + comm.size() - 1) % comm.size(), step),
        sends_(comm, buf, ag_.sends(), ag_.send_tag(), 0) {}
  size_t staged_bytes() const { return ag_.staged_bytes(); }
  Status start(char* area) { return ag_.start(area); }
  // The owned chunk is reduced up to view offset `end`: finishes and sends what lies below it.
  Status reduced_up_to(size_t end) {
    const std::vector<Segment>& segs = ag_.sends();
    for (; next_ < segs.size() && segs[next_].offset + segs[next_].bytes <= end; ++next_) {
      finish_reduction(buf_, segs[next_].offset, segs[next_].bytes, spec_);
      HVDC_RETURN_IF_ERROR(sends_.advance(next_ + 1));
    }
    return Status::ok();
  }
  Status finish() {
    HVDC_RETURN_IF_ERROR(sends_.finish());
    return ag_.finish();
  }

 private:
  const Pieces& buf_;
  const ReduceSpec& spec_;
  AllgatherStep ag_;
  PacedSends sends_;
  size_t next_ = 0;
};

// Sends chunk `send` of `from` to the right neighbour and reduces chunk `recv` from the left,
// out = in op received, segment by segment through messages_in_flight() scratch slots (enough to
// keep the wire busy while one is reduced). Both sides cut a chunk into the same segments, because
// every member's view has the same layout. With `pass_on`, chunk `recv` goes on as it is reduced.
Status reduce_scatter_step(Comm& comm, const Views& v, const Pieces& from, const Chunks& ch,
                           int send, int recv, int step, const ReduceSpec& spec, PassOn* pass_on) {
  const int n = comm.size();
  const int left = (comm.index + n - 1) % n;
  const SegmentLimits limits = reduce_limits(comm, ch.esize);
  std::vector<Segment> out = split_segments(v.out, ch.offset(send), ch.bytes(send), limits);
  if (&from != &v.out) read_from(from, &out);
  std::vector<Segment> in = split_segments(v.out, ch.offset(recv), ch.bytes(recv), limits);
  const size_t slot_count = messages_in_flight(limits.max_staged);
  char* slots = comm.scratch_bytes(slot_count * limits.max_staged);
  const size_t own_staged = staged_bytes(out);
  char* area = comm.staging_bytes(own_staged + (pass_on ? pass_on->staged_bytes() : 0));
  place_staged(out, area);
  if (pass_on) HVDC_RETURN_IF_ERROR(pass_on->start(area + own_staged));

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
    if (pass_on) HVDC_RETURN_IF_ERROR(pass_on->reduced_up_to(in[s].offset + in[s].bytes));
  }
  HVDC_RETURN_IF_ERROR(sends.finish());
  return pass_on ? pass_on->finish() : Status::ok();
}

// Steps 0 to n - 2; with `pass_on`, the last one passes its chunk on.
Status reduce_scatter_steps(Comm& comm, const Views& v, const Chunks& ch, const ReduceSpec& spec,
                            PassOn* pass_on) {
  const int n = comm.size();
  const int me = comm.index;
  // After step s, chunk (me - s - 1) holds s + 2 contributions; after n - 1 steps this rank owns
  // chunk (me + 1), reduced over every member. Step 0 sends this member's own input; every later
  // step sends the partial sum the step before wrote into out.
  for (int s = 0; s < n - 1; ++s) {
    HVDC_RETURN_IF_ERROR(reduce_scatter_step(comm, v, s == 0 ? v.in : v.out, ch, (me - s + n) % n,
                                             (me - s - 1 + n) % n, s, spec,
                                             s == n - 2 ? pass_on : nullptr));
  }
  return Status::ok();
}

}  // namespace

Status reduce_scatter_phase(Comm& comm, const Pieces& in, const Pieces& out, const Chunks& ch,
                            const ReduceSpec& spec) {
  return reduce_scatter_steps(comm, Views{in, out}, ch, spec, nullptr);
}

Status allreduce_ring(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec) {
  const int n = comm.size();
  const Chunks ch = make_chunks(out, n, common::dtype_size(spec.dtype));
  const int owned = (comm.index + 1) % n;
  // Out of place, every chunk of out is first written by a reduce or by the allgather, so the
  // input is never copied into the output.
  if (comm.pieces_across_hosts) {
    PassOn pass_on(comm, out, ch, owned, n - 1, spec);
    HVDC_RETURN_IF_ERROR(reduce_scatter_steps(comm, Views{in, out}, ch, spec, &pass_on));
    return allgather_phase(comm, out, ch, 1, n - 1, 1);
  }
  HVDC_RETURN_IF_ERROR(reduce_scatter_phase(comm, in, out, ch, spec));
  finish_reduction(out, ch.offset(owned), ch.bytes(owned), spec);
  return allgather_phase(comm, out, ch, 1, n - 1);
}

}  // namespace hvdc::ops::cpu
