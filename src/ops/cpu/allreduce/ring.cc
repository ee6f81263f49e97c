#include <algorithm>
#include <vector>

#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {
namespace {

// Receive slots in flight per step: enough to keep the wire busy while one slot is reduced.
constexpr size_t kSlots = 4;

struct Chunks {
  size_t base, rem, esize;
  size_t offset(int i) const { return (i * base + std::min<size_t>(i, rem)) * esize; }
  size_t count(int i) const { return base + (static_cast<size_t>(i) < rem ? 1 : 0); }
};

// Sends chunk `send` to the right neighbour and reduces chunk `recv` from the left into buf,
// segment by segment through kSlots scratch slots.
Status reduce_scatter_step(Comm& comm, char* buf, const Chunks& ch, int send, int recv, int step,
                           const ReduceSpec& spec) {
  const int n = comm.size();
  const int right = comm.members[(comm.index + 1) % n];
  const int left_index = (comm.index + n - 1) % n;
  const size_t seg = std::max<size_t>(1, comm.segment_bytes / ch.esize);
  const size_t send_count = ch.count(send), recv_count = ch.count(recv);
  const size_t send_segs = (send_count + seg - 1) / seg, recv_segs = (recv_count + seg - 1) / seg;
  char* slots = comm.scratch_bytes(kSlots * seg * ch.esize);

  std::vector<transport::Request> sends(send_segs);
  for (size_t s = 0; s < send_segs; ++s) {
    size_t len = std::min(seg, send_count - s * seg) * ch.esize;
    HVDC_RETURN_IF_ERROR(comm.transport->isend(right, comm.tag(comm.index, step),
                                               buf + ch.offset(send) + s * seg * ch.esize, len,
                                               &sends[s]));
  }
  std::vector<transport::Request> recvs(kSlots);
  auto post = [&](size_t s) {
    size_t len = std::min(seg, recv_count - s * seg) * ch.esize;
    return comm.transport->irecv(comm.members[left_index], comm.tag(left_index, step),
                                 slots + (s % kSlots) * seg * ch.esize, len, &recvs[s % kSlots]);
  };
  for (size_t s = 0; s < std::min(kSlots, recv_segs); ++s) HVDC_RETURN_IF_ERROR(post(s));
  for (size_t s = 0; s < recv_segs; ++s) {
    HVDC_RETURN_IF_ERROR(comm.transport->wait(&recvs[s % kSlots], 1, comm.interrupt));
    size_t len = std::min(seg, recv_count - s * seg);
    char* dst = buf + ch.offset(recv) + s * seg * ch.esize;
    reduce(dst, dst, slots + (s % kSlots) * seg * ch.esize, len, spec.dtype, spec.op);
    if (s + kSlots < recv_segs) HVDC_RETURN_IF_ERROR(post(s + kSlots));
  }
  return comm.transport->wait(sends.data(), sends.size(), comm.interrupt);
}

// Passes finished chunk `send` right and receives finished chunk `recv` from the left in place.
Status allgather_step(Comm& comm, char* buf, const Chunks& ch, int send, int recv, int step) {
  const int n = comm.size();
  const int left_index = (comm.index + n - 1) % n;
  transport::Request reqs[2];
  HVDC_RETURN_IF_ERROR(comm.transport->irecv(comm.members[left_index], comm.tag(left_index, step),
                                             buf + ch.offset(recv), ch.count(recv) * ch.esize,
                                             &reqs[0]));
  HVDC_RETURN_IF_ERROR(comm.transport->isend(comm.members[(comm.index + 1) % n],
                                             comm.tag(comm.index, step), buf + ch.offset(send),
                                             ch.count(send) * ch.esize, &reqs[1]));
  return comm.transport->wait(reqs, 2, comm.interrupt);
}

}  // namespace

Status allreduce_ring(Comm& comm, void* data, size_t count, const ReduceSpec& spec) {
  const int n = comm.size();
  const int me = comm.index;
  char* buf = static_cast<char*>(data);
  const Chunks ch{count / n, count % n, common::dtype_size(spec.dtype)};
  // After step s of the reduce-scatter, chunk (me - s - 1) holds s + 2 contributions; after n - 1
  // steps this rank owns chunk (me + 1), reduced over every member.
  for (int s = 0; s < n - 1; ++s) {
    HVDC_RETURN_IF_ERROR(
        reduce_scatter_step(comm, buf, ch, (me - s + n) % n, (me - s - 1 + n) % n, s, spec));
  }
  const int owned = (me + 1) % n;
  finish_reduction(buf + ch.offset(owned), ch.count(owned), spec);
  for (int s = 0; s < n - 1; ++s) {
    HVDC_RETURN_IF_ERROR(
        allgather_step(comm, buf, ch, (me + 1 - s + n) % n, (me - s + n) % n, n - 1 + s));
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
