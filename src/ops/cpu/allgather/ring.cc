#include "ops/cpu/allgather/allgather.h"

namespace hvdc::ops::cpu {

Status allgather_ring(Comm& comm, char* out, const std::vector<size_t>& block_bytes) {
  const int n = comm.size();
  std::vector<size_t> offset(n + 1, 0);
  for (int m = 0; m < n; ++m) offset[m + 1] = offset[m] + block_bytes[m];
  const int left = (comm.index + n - 1) % n, right = (comm.index + 1) % n;
  // In step s this member forwards block (me - s) and receives block (me - s - 1).
  for (int s = 0; s < n - 1; ++s) {
    const int send = (comm.index - s + n) % n, recv = (comm.index - s - 1 + n) % n;
    transport::Request reqs[2];
    HVDC_RETURN_IF_ERROR(comm.transport->irecv(comm.members[left], comm.tag(left, s),
                                               out + offset[recv], block_bytes[recv], &reqs[0]));
    HVDC_RETURN_IF_ERROR(comm.transport->isend(comm.members[right], comm.tag(comm.index, s),
                                               out + offset[send], block_bytes[send], &reqs[1]));
    HVDC_RETURN_IF_ERROR(comm.transport->wait(reqs, 2, comm.interrupt));
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu
