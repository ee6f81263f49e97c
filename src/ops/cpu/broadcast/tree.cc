#include <vector>

#include "ops/cpu/broadcast/broadcast.h"

namespace hvdc::ops::cpu {

Status broadcast_tree(Comm& comm, void* buf, size_t bytes, int root) {
  const int n = comm.size();
  // Positions relative to the root: position 0 holds the data first; in the round with mask m,
  // every holder p < m sends to p + m.
  const int me = (comm.index - root + n) % n;
  auto member_at = [&](int position) { return (position + root) % n; };
  int mask = 1;
  int round = 0;
  if (me != 0) {
    // This member receives in the round whose mask is its highest bit.
    int high = 1;
    while (high * 2 <= me) high *= 2;
    for (int m = 1; m < high; m *= 2) ++round;
    const int parent = member_at(me - high);
    transport::Request req;
    HVDC_RETURN_IF_ERROR(
        comm.transport->irecv(comm.members[parent], comm.tag(parent, round), buf, bytes, &req));
    HVDC_RETURN_IF_ERROR(comm.transport->wait(&req, 1, comm.interrupt));
    mask = high * 2;
    ++round;
  }
  std::vector<transport::Request> sends;
  for (; mask < n; mask *= 2, ++round) {
    if (me + mask >= n) continue;
    transport::Request req;
    HVDC_RETURN_IF_ERROR(comm.transport->isend(comm.members[member_at(me + mask)],
                                               comm.tag(comm.index, round), buf, bytes, &req));
    sends.push_back(req);
  }
  return comm.transport->wait(sends.data(), sends.size(), comm.interrupt);
}

}  // namespace hvdc::ops::cpu
