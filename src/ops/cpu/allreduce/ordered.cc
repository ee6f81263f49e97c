#include <vector>

#include "common/dtype.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/allreduce/phases.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {
namespace {

// Two banks of one slot per member: one bank fills from the wire while the other is reduced.
constexpr size_t kBanks = 2;

// Every member sends its copy of chunk m to member m (one message per segment, tag step 0).
Status send_chunks(Comm& comm, const Pieces& buf, const Chunks& ch, const SegmentLimits& limits,
                   std::vector<transport::Request>* sends) {
  const int n = comm.size();
  std::vector<std::vector<Segment>> per_peer(n);
  size_t staging = 0;
  for (int m = 0; m < n; ++m) {
    if (m == comm.index) continue;
    per_peer[m] = split_segments(buf, ch.offset(m), ch.bytes(m), limits);
    staging += staged_bytes(per_peer[m]);
  }
  char* area = comm.staging_bytes(staging);
  for (int m = 0; m < n; ++m) {
    if (m == comm.index) continue;
    area = place_staged(per_peer[m], area);
    HVDC_RETURN_IF_ERROR(
        post_sends(comm, buf, per_peer[m], comm.members[m], comm.tag(comm.index, 0), sends));
  }
  return Status::ok();
}

// Collects segment `seg` of this member's chunk from every member and reduces the copies in
// member order into the view.
class OwnChunkReducer {
 public:
  OwnChunkReducer(Comm& comm, const Pieces& buf, std::vector<Segment> segs, size_t slot_bytes,
                  const ReduceSpec& spec)
      : comm_(comm), buf_(buf), segs_(std::move(segs)), slot_bytes_(slot_bytes), spec_(spec) {
    const size_t n = static_cast<size_t>(comm.size());
    slots_ = comm.scratch_bytes(kBanks * n * slot_bytes);
    recvs_.resize(kBanks * n);
  }

  Status run() {
    for (size_t s = 0; s < std::min(kBanks, segs_.size()); ++s) HVDC_RETURN_IF_ERROR(post(s));
    for (size_t s = 0; s < segs_.size(); ++s) {
      HVDC_RETURN_IF_ERROR(wait_bank(s));
      reduce_in_order(s);
      if (s + kBanks < segs_.size()) HVDC_RETURN_IF_ERROR(post(s + kBanks));
    }
    return Status::ok();
  }

 private:
  char* slot(size_t s, int member) const {
    return slots_ + ((s % kBanks) * comm_.size() + member) * slot_bytes_;
  }

  Status post(size_t s) {
    for (int m = 0; m < comm_.size(); ++m) {
      if (m == comm_.index) continue;
      HVDC_RETURN_IF_ERROR(comm_.transport->irecv(comm_.members[m], comm_.tag(m, 0), slot(s, m),
                                                  segs_[s].bytes,
                                                  &recvs_[(s % kBanks) * comm_.size() + m]));
    }
    return Status::ok();
  }

  Status wait_bank(size_t s) {
    transport::Request* bank = &recvs_[(s % kBanks) * comm_.size()];
    for (int m = 0; m < comm_.size(); ++m) {
      if (m == comm_.index) continue;
      HVDC_RETURN_IF_ERROR(comm_.transport->wait(&bank[m], 1, comm_.interrupt));
    }
    return Status::ok();
  }

  void reduce_in_order(size_t s) {
    const Segment& seg = segs_[s];
    const size_t count = seg.bytes / common::dtype_size(spec_.dtype);
    buf_.gather(seg.offset, seg.bytes, slot(s, comm_.index));
    char* acc = slot(s, 0);
    for (int m = 1; m < comm_.size(); ++m)
      reduce(acc, acc, slot(s, m), count, spec_.dtype, spec_.op);
    finish_reduction(acc, count, spec_);
    buf_.scatter(seg.offset, seg.bytes, acc);
  }

  Comm& comm_;
  const Pieces& buf_;
  std::vector<Segment> segs_;
  size_t slot_bytes_;
  ReduceSpec spec_;
  char* slots_;
  std::vector<transport::Request> recvs_;
};

}  // namespace

Status allreduce_ordered(Comm& comm, const Pieces& buf, const ReduceSpec& spec) {
  const int n = comm.size();
  const Chunks ch = make_chunks(buf, n, common::dtype_size(spec.dtype));
  const SegmentLimits limits = reduce_limits(comm, ch.esize);
  std::vector<transport::Request> sends;
  HVDC_RETURN_IF_ERROR(send_chunks(comm, buf, ch, limits, &sends));
  OwnChunkReducer reducer(comm, buf,
                          split_segments(buf, ch.offset(comm.index), ch.bytes(comm.index), limits),
                          limits.max_staged, spec);
  HVDC_RETURN_IF_ERROR(reducer.run());
  HVDC_RETURN_IF_ERROR(comm.transport->wait(sends.data(), sends.size(), comm.interrupt));
  return allgather_phase(comm, buf, ch, 0, 1);
}

}  // namespace hvdc::ops::cpu
