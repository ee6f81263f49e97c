#include <cstring>
#include <vector>

#include "common/copy_bytes.h"
#include "ops/cpu/alltoall/alltoall.h"

namespace hvdc::ops::cpu {

using common::make_error;

namespace {

// Steps in flight: enough to keep several peers busy at once, bounded so that a large job does not
// post 2(n-1) requests per member.
constexpr int kWindow = 8;

// Byte offset of each block in a buffer that holds the blocks back to back.
std::vector<size_t> block_offsets(const std::vector<size_t>& bytes) {
  std::vector<size_t> offset(bytes.size(), 0);
  for (size_t m = 1; m < bytes.size(); ++m) offset[m] = offset[m - 1] + bytes[m - 1];
  return offset;
}

struct Exchange {
  const char* sendbuf;
  const std::vector<size_t>& send_bytes;
  std::vector<size_t> send_offset;
  char* recvbuf;
  const std::vector<size_t>& recv_bytes;
  std::vector<size_t> recv_offset;
};

// Posts step s: the receive from (index - s) into slot[0], the send to (index + s) into slot[1].
// An empty block leaves its request empty, which wait() treats as complete.
Status post_step(Comm& comm, const Exchange& x, int s, transport::Request* slot) {
  const int n = comm.size();
  const int to = (comm.index + s) % n, from = (comm.index - s + n) % n;
  slot[0] = slot[1] = transport::Request{};
  if (x.recv_bytes[from] > 0) {
    HVDC_RETURN_IF_ERROR(comm.transport->irecv(comm.members[from], comm.tag(from, s),
                                               x.recvbuf + x.recv_offset[from], x.recv_bytes[from],
                                               &slot[0]));
  }
  if (x.send_bytes[to] > 0) {
    HVDC_RETURN_IF_ERROR(comm.transport->isend(comm.members[to], comm.tag(comm.index, s),
                                               x.sendbuf + x.send_offset[to], x.send_bytes[to],
                                               &slot[1]));
  }
  return Status::ok();
}

// Runs steps 1..n-1; step s reuses the two requests of step s - kWindow once they completed.
Status exchange_steps(Comm& comm, const Exchange& x, std::vector<transport::Request>& reqs) {
  for (int s = 1; s < comm.size(); ++s) {
    transport::Request* slot = &reqs[2 * (s % kWindow)];
    if (s > kWindow) HVDC_RETURN_IF_ERROR(comm.transport->wait(slot, 2, comm.interrupt));
    HVDC_RETURN_IF_ERROR(post_step(comm, x, s, slot));
  }
  return comm.transport->wait(reqs.data(), reqs.size(), comm.interrupt);
}

// Completes what already finished and cancels the rest, so that no receive is left posted into
// the caller's buffer after a failure: a wait whose interrupt fails at the first idle moment.
void cancel_requests(Comm& comm, std::vector<transport::Request>& reqs) {
  auto stop = [] { return make_error(HVD_ERR_ABORTED, "alltoall cancelled"); };
  (void)comm.transport->wait(reqs.data(), reqs.size(), stop);
}

}  // namespace

Status alltoall_pairwise(Comm& comm, const char* sendbuf, const std::vector<size_t>& send_bytes,
                         char* recvbuf, const std::vector<size_t>& recv_bytes) {
  const int n = comm.size();
  const int me = comm.index;
  if (send_bytes.size() != static_cast<size_t>(n) || recv_bytes.size() != static_cast<size_t>(n)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "alltoall: %zu send and %zu receive block sizes for %d members",
                      send_bytes.size(), recv_bytes.size(), n);
  }
  if (send_bytes[me] != recv_bytes[me]) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "alltoall: member %d sends itself %zu bytes but expects %zu", me,
                      send_bytes[me], recv_bytes[me]);
  }
  const Exchange x{sendbuf, send_bytes, block_offsets(send_bytes),
                   recvbuf, recv_bytes, block_offsets(recv_bytes)};
  if (send_bytes[me] > 0) {
    common::copy_bytes(recvbuf + x.recv_offset[me], sendbuf + x.send_offset[me], send_bytes[me]);
  }
  if (n == 1) return Status::ok();
  std::vector<transport::Request> reqs(2 * kWindow);
  Status status = exchange_steps(comm, x, reqs);
  if (!status.is_ok()) cancel_requests(comm, reqs);
  return status;
}

}  // namespace hvdc::ops::cpu
