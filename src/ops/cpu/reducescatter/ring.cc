#include <algorithm>
#include <cstring>
#include <vector>

#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "ops/cpu/integer_average.h"
#include "ops/cpu/reduce/reduce.h"
#include "ops/cpu/reducescatter/reducescatter.h"

namespace hvdc::ops::cpu {

using common::make_error;

namespace {

// Receive slots in flight per step: enough to keep the wire busy while one slot is reduced.
constexpr size_t kSlots = 4;

// What one ring step moves: `send_count` elements at `send` go right; `recv_count` elements come
// from the left, and dst = acc (op) received. dst is acc, except in the last step, where it is
// the caller's output.
struct Step {
  int step;
  const char* send;
  size_t send_count;
  const char* acc;
  char* dst;
  size_t recv_count;
};

struct Segments {
  size_t elems;  // elements per segment
  size_t esize;
  size_t count(size_t total) const { return (total + elems - 1) / elems; }
  size_t length(size_t total, size_t s) const { return std::min(elems, total - s * elems); }
};

Status post_sends(Comm& comm, const Step& st, const Segments& seg, transport::Request* sends) {
  const int right = comm.members[(comm.index + 1) % comm.size()];
  for (size_t s = 0; s < seg.count(st.send_count); ++s) {
    HVDC_RETURN_IF_ERROR(comm.transport->isend(
        right, comm.tag(comm.index, st.step), st.send + s * seg.elems * seg.esize,
        seg.length(st.send_count, s) * seg.esize, &sends[s]));
  }
  return Status::ok();
}

// Receives the left neighbour's segments through kSlots scratch slots and reduces each as it
// lands; the slot is reposted for the segment kSlots further on once it has been consumed.
Status reduce_from_left(Comm& comm, const Step& st, const Segments& seg, const ReduceSpec& spec,
                        transport::Request* recvs) {
  const int n = comm.size();
  const int left = (comm.index + n - 1) % n;
  const size_t slot_bytes = seg.elems * seg.esize;
  char* slots = comm.scratch_bytes(kSlots * slot_bytes);
  const size_t segs = seg.count(st.recv_count);
  auto post = [&](size_t s) {
    return comm.transport->irecv(comm.members[left], comm.tag(left, st.step),
                                 slots + (s % kSlots) * slot_bytes,
                                 seg.length(st.recv_count, s) * seg.esize, &recvs[s % kSlots]);
  };
  for (size_t s = 0; s < std::min(kSlots, segs); ++s) HVDC_RETURN_IF_ERROR(post(s));
  for (size_t s = 0; s < segs; ++s) {
    HVDC_RETURN_IF_ERROR(comm.transport->wait(&recvs[s % kSlots], 1, comm.interrupt));
    const size_t at = s * slot_bytes;
    reduce(st.dst + at, st.acc + at, slots + (s % kSlots) * slot_bytes,
           seg.length(st.recv_count, s), spec.dtype, spec.op);
    if (s + kSlots < segs) HVDC_RETURN_IF_ERROR(post(s + kSlots));
  }
  return Status::ok();
}

Status run_step(Comm& comm, const Step& st, const Segments& seg, const ReduceSpec& spec) {
  std::vector<transport::Request> reqs(seg.count(st.send_count) + kSlots);
  transport::Request* recvs = reqs.data() + seg.count(st.send_count);
  Status status = post_sends(comm, st, seg, reqs.data());
  if (status.is_ok()) status = reduce_from_left(comm, st, seg, spec, recvs);
  if (status.is_ok()) return comm.transport->wait(reqs.data(), reqs.size(), comm.interrupt);
  // Leave no receive posted into scratch and no request unowned: a wait whose interrupt fails at
  // the first idle moment completes what finished and cancels the rest.
  auto stop = [] { return make_error(HVD_ERR_ABORTED, "reducescatter cancelled"); };
  (void)comm.transport->wait(reqs.data(), reqs.size(), stop);
  return status;
}

}  // namespace

Status reducescatter_ring(Comm& comm, void* buf, const std::vector<size_t>& counts, void* out,
                          const ReduceSpec& spec) {
  const int n = comm.size();
  const int me = comm.index;
  const size_t esize = common::dtype_size(spec.dtype);
  if (counts.size() != static_cast<size_t>(n) || esize == 0) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "reducescatter: %zu block counts for %d members, dtype %d", counts.size(), n,
                      spec.dtype);
  }
  if (is_integer_average(spec)) return reducescatter_integer_average(comm, buf, counts, out, spec);
  char* data = static_cast<char*>(buf);
  char* result = static_cast<char*>(out);
  std::vector<size_t> offset(n, 0);  // in bytes
  for (int m = 1; m < n; ++m) offset[m] = offset[m - 1] + counts[m - 1] * esize;
  if (n == 1) {
    if (counts[0] > 0 && result != data) common::move_bytes(result, data, counts[0] * esize);
    finish_reduction(result, counts[0], spec);
    return Status::ok();
  }
  const Segments seg{std::max<size_t>(1, comm.segment_bytes / esize), esize};
  // In step s this member forwards block (me - s - 1), which then holds s + 1 contributions, and
  // reduces block (me - s - 2) into buf; the last step (s = n - 2) reduces its own block into out.
  for (int s = 0; s < n - 1; ++s) {
    const int send = (me - s - 1 + 2 * n) % n, recv = (me - s - 2 + 2 * n) % n;
    char* dst = s == n - 2 ? result : data + offset[recv];
    const Step st{s, data + offset[send], counts[send], data + offset[recv], dst, counts[recv]};
    HVDC_RETURN_IF_ERROR(run_step(comm, st, seg, spec));
  }
  finish_reduction(result, counts[me], spec);
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
