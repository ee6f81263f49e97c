#include "ops/cpu/allreduce/phases.h"

#include <algorithm>

namespace hvdc::ops::cpu {
namespace {

size_t round_down(size_t bytes, size_t esize) {
  return std::max<size_t>(1, bytes / esize) * esize;
}

// Passes finished chunk `send` right and receives finished chunk `recv` from the left.
Status allgather_step(Comm& comm, const Pieces& buf, const Chunks& ch, int send, int recv,
                      int step) {
  AllgatherStep ag(comm, buf, ch, send, recv, step);
  HVDC_RETURN_IF_ERROR(ag.start(comm.staging_bytes(ag.staged_bytes())));
  if (!comm.pieces_across_hosts) {
    PacedSends sends(comm, buf, ag.sends(), ag.send_tag(), ag.sends().size());
    HVDC_RETURN_IF_ERROR(sends.advance(0));
    HVDC_RETURN_IF_ERROR(sends.finish());
    return ag.finish();
  }
  // Many small messages: paced by the receives, as in the reduce-scatter.
  PacedSends sends(comm, buf, ag.sends(), ag.send_tag(),
                   messages_in_flight(copy_limits(comm, ch.esize).max_direct));
  for (size_t s = 0; s <= ag.receive_count(); ++s) {
    HVDC_RETURN_IF_ERROR(sends.advance(s));
    if (s < ag.receive_count()) HVDC_RETURN_IF_ERROR(ag.wait_receive(s));
  }
  HVDC_RETURN_IF_ERROR(sends.finish());
  return ag.finish();
}

}  // namespace

AllgatherStep::AllgatherStep(Comm& comm, const Pieces& buf, const Chunks& ch, int send, int recv,
                             int step)
    : comm_(comm), buf_(buf), step_(step) {
  const SegmentLimits limits = copy_limits(comm, ch.esize);
  in_ = split_segments(buf, ch.offset(recv), ch.bytes(recv), limits);
  out_ = split_segments(buf, ch.offset(send), ch.bytes(send), limits);
  recvs_.resize(in_.size());
}

Status AllgatherStep::start(char* area) {
  place_staged(out_, place_staged(in_, area));
  const int left = (comm_.index + comm_.size() - 1) % comm_.size();
  for (size_t s = 0; s < in_.size(); ++s) {
    HVDC_RETURN_IF_ERROR(comm_.transport->irecv(comm_.members[left], comm_.tag(left, step_),
                                                in_[s].addr, in_[s].bytes, &recvs_[s]));
  }
  return Status::ok();
}

Status AllgatherStep::finish() {
  HVDC_RETURN_IF_ERROR(comm_.transport->wait(recvs_.data(), recvs_.size(), comm_.interrupt));
  for (const Segment& s : in_) {
    if (s.staged) buf_.scatter(s.offset, s.bytes, s.addr);
  }
  return Status::ok();
}

Chunks make_chunks(const Pieces& buf, int members, size_t esize) {
  const size_t count = buf.bytes() / esize;
  return Chunks{count / members, count % members, esize};
}

SegmentLimits reduce_limits(const Comm& comm, size_t esize) {
  const size_t seg = round_down(comm.segment_bytes, esize);
  return SegmentLimits{seg, seg, round_down(seg / 16, esize)};
}

SegmentLimits copy_limits(const Comm& comm, size_t esize) {
  const size_t seg = round_down(comm.segment_bytes, esize);
  const size_t direct = comm.pieces_across_hosts ? seg : round_down(size_t{1} << 30, esize);
  return SegmentLimits{direct, seg, round_down(seg / 16, esize)};
}

size_t messages_in_flight(size_t segment_bytes) {
  constexpr size_t kInFlightBytes = 1 << 20;
  return std::clamp<size_t>(kInFlightBytes / std::max<size_t>(segment_bytes, 1), 4, 64);
}

Status post_send(Comm& comm, const Pieces& buf, const Segment& seg, int peer, transport::Tag tag,
                 transport::Request* req) {
  if (seg.staged) buf.gather(seg.offset, seg.bytes, seg.addr);
  return comm.transport->isend(peer, tag, seg.addr, seg.bytes, req);
}

Status post_sends(Comm& comm, const Pieces& buf, const std::vector<Segment>& segs, int peer,
                  transport::Tag tag, std::vector<transport::Request>* reqs) {
  for (const Segment& s : segs) {
    reqs->emplace_back();
    HVDC_RETURN_IF_ERROR(post_send(comm, buf, s, peer, tag, &reqs->back()));
  }
  return Status::ok();
}

PacedSends::PacedSends(Comm& comm, const Pieces& buf, const std::vector<Segment>& segs,
                       transport::Tag tag, size_t window)
    : comm_(comm), buf_(buf), segs_(segs), tag_(tag), window_(window), reqs_(segs.size()) {}

Status PacedSends::post_up_to(size_t end) {
  const int right = comm_.members[(comm_.index + 1) % comm_.size()];
  for (end = std::min(end, segs_.size()); posted_ < end; ++posted_) {
    HVDC_RETURN_IF_ERROR(post_send(comm_, buf_, segs_[posted_], right, tag_, &reqs_[posted_]));
  }
  return Status::ok();
}

Status PacedSends::finish() {
  HVDC_RETURN_IF_ERROR(post_up_to(segs_.size()));
  return comm_.transport->wait(reqs_.data(), reqs_.size(), comm_.interrupt);
}

Status allgather_phase(Comm& comm, const Pieces& buf, const Chunks& ch, int shift, int first_step,
                       int done) {
  const int n = comm.size();
  const int owned = (comm.index + shift) % n;
  for (int s = done; s < n - 1; ++s) {
    HVDC_RETURN_IF_ERROR(allgather_step(comm, buf, ch, (owned - s + n) % n, (owned - s - 1 + n) % n,
                                        first_step + s));
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
