// The loopback transport: rank options.rank of a LoopbackFabric, for engines that run as
// threads of one process. It keeps the contract of transport.h as the UCX transport does:
// tagged receives matched by exact tag, control messages polled by mask, waits that end on a
// failed peer, a progress timeout or the caller's interrupt, and a sleep that ends on a
// delivery or the caller's fd. Sends copy at once (they complete when posted).
#pragma once

#include <memory>

#include "transport/factory.h"

namespace hvdc::transport::loopback {

class LoopbackFabric;

// HVD_ERR_INVALID_ARGUMENT when options' rank or size does not fit the fabric.
Status create_loopback_transport(std::shared_ptr<LoopbackFabric> fabric,
                                 const TransportOptions& options, std::unique_ptr<Transport>* out);

}  // namespace hvdc::transport::loopback
