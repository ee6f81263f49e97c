// What UCX's description of an endpoint says about the transports its messages take.
#pragma once

#include <string_view>

namespace hvdc::transport::ucx {

// Whether the description (ucp_ep_print_info's text) names at least one lane and every lane is
// TCP's: the endpoint's messages travel over sockets only (no RDMA, no shared memory).
bool lanes_only_tcp(std::string_view ep_info);

}  // namespace hvdc::transport::ucx
