// Pieces shared by the chunked allreduce algorithms (ring and member-ordered): how the view is
// cut into one chunk per member, how segments are posted, and the allgather phase that passes
// finished chunks round the ring.
#pragma once

#include <algorithm>
#include <vector>

#include "ops/cpu/comm.h"
#include "ops/cpu/segments.h"

namespace hvdc::ops::cpu {

// Chunk i holds count(i) elements at byte offset(i); the first `rem` chunks get one extra.
struct Chunks {
  size_t base, rem, esize;
  size_t offset(int i) const { return (i * base + std::min<size_t>(i, rem)) * esize; }
  size_t count(int i) const { return base + (static_cast<size_t>(i) < rem ? 1 : 0); }
  size_t bytes(int i) const { return count(i) * esize; }
};

Chunks make_chunks(const Pieces& buf, int members, size_t esize);

// Segments bounded by comm.segment_bytes (what a receive slot holds), for reduction phases.
SegmentLimits reduce_limits(const Comm& comm, size_t esize);
// In-place runs unbounded (bounded too where comm.pieces_across_hosts), packed blocks bounded:
// for phases that only copy.
SegmentLimits copy_limits(const Comm& comm, size_t esize);

// Messages a ring step keeps in flight each way: at least 4 and at least 1 MiB of them, so that
// small segments (between hosts over TCP) mostly find a receive waiting rather than arrive
// unexpected (copied aside by the transport), up to 64.
size_t messages_in_flight(size_t segment_bytes);

// Packs the segment if staged (its addr must be placed) and posts its send to `peer`.
Status post_send(Comm& comm, const Pieces& buf, const Segment& seg, int peer, transport::Tag tag,
                 transport::Request* req);
// post_send() for each segment, the requests appended to *reqs.
Status post_sends(Comm& comm, const Pieces& buf, const std::vector<Segment>& segs, int peer,
                  transport::Tag tag, std::vector<transport::Request>* reqs);

// A step's sends to the right neighbour, posted in order as its receives complete, `window`
// ahead: the neighbour then has about as many receives waiting.
class PacedSends {
 public:
  PacedSends(Comm& comm, const Pieces& buf, const std::vector<Segment>& segs, transport::Tag tag,
             size_t window);
  // After `received` of the step's receives completed.
  Status advance(size_t received) { return post_up_to(received + window_); }
  // Posts the rest and waits for every send.
  Status finish();

 private:
  Status post_up_to(size_t end);

  Comm& comm_;
  const Pieces& buf_;
  const std::vector<Segment>& segs_;
  transport::Tag tag_;
  size_t window_;
  size_t posted_ = 0;
  std::vector<transport::Request> reqs_;
};

// One allgather step: finished chunk `send` goes to the right neighbour in segments (sends()),
// chunk `recv` comes from the left into place. start() posts every receive; the caller posts the
// sends (PacedSends over sends(), tag send_tag()) as the chunk is ready; finish() waits for the
// receives and unpacks the staged ones.
class AllgatherStep {
 public:
  AllgatherStep(Comm& comm, const Pieces& buf, const Chunks& ch, int send, int recv, int step);
  size_t staged_bytes() const { return cpu::staged_bytes(in_) + cpu::staged_bytes(out_); }
  // Gives the staged segments their place in `area` (staged_bytes() long), posts the receives.
  Status start(char* area);
  const std::vector<Segment>& sends() const { return out_; }
  transport::Tag send_tag() const { return comm_.tag(comm_.index, step_); }
  size_t receive_count() const { return in_.size(); }
  Status wait_receive(size_t i) { return comm_.transport->wait(&recvs_[i], 1, comm_.interrupt); }
  Status finish();

 private:
  Comm& comm_;
  const Pieces& buf_;
  int step_;
  std::vector<Segment> in_, out_;
  std::vector<transport::Request> recvs_;
};

// The ring's reduce-scatter, steps 0 to n - 2, from `in` into `out` (the same object in place):
// after it this member owns chunk (index + 1) % n of out, reduced over every member (op only:
// finish_reduction is the caller's).
Status reduce_scatter_phase(Comm& comm, const Pieces& in, const Pieces& out, const Chunks& ch,
                            const ReduceSpec& spec);

// After the reduction phase this member owns chunk (index + shift) % n, fully reduced and
// finished; n - 1 steps from `first_step` on give every member every chunk. The first `done`
// of them are skipped (the ring ran its first one inside its last reduce-scatter step).
Status allgather_phase(Comm& comm, const Pieces& buf, const Chunks& ch, int shift, int first_step,
                       int done = 0);

}  // namespace hvdc::ops::cpu
