// Host alltoall over blocks of different sizes: every member sends one block to every member and
// receives one block from each.
#pragma once

#include <cstddef>
#include <vector>

#include "ops/cpu/comm.h"

namespace hvdc::ops::cpu {

// Member m receives send_bytes[m] bytes taken from sendbuf at offset sum(send_bytes[0..m)); this
// member receives recv_bytes[m] bytes from member m into recvbuf at offset sum(recv_bytes[0..m)).
// The own block is copied locally. Empty blocks cost no message (both sides know the sizes).
// sendbuf and recvbuf must not overlap.
//
// Pairwise exchange: in step s = 1..n-1 this member sends to (index + s) and receives from
// (index - s), with a bounded window of steps in flight.
Status alltoall_pairwise(Comm& comm, const char* sendbuf, const std::vector<size_t>& send_bytes,
                         char* recvbuf, const std::vector<size_t>& recv_bytes);

}  // namespace hvdc::ops::cpu
