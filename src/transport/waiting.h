// What a transport's wait tells about the requests it still waits for: shared by the
// transports, so that a stalled wait reads the same over UCX and the loopback.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace hvdc::transport {

// How many of the requests are not complete yet.
size_t incomplete(const Request* reqs, size_t count);
// The peers of the requests not yet complete, ascending, once each.
std::vector<int> peers_of(const Request* reqs, size_t count);
// "receive from rank 1, send to rank 2": what a stuck wait still waits for.
std::string describe_waiting(const Request* reqs, size_t count);

}  // namespace hvdc::transport
