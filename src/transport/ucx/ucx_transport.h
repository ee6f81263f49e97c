// The UCX transport: one context, one worker progressed by the engine thread, an endpoint per
// peer with peer error handling (a dead peer becomes an error, not a hang).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/factory.h"
#include "transport/transport.h"

namespace hvdc::transport {

using UcxOptions = TransportOptions;

// A TransportFactory. HVD_ERR_UNSUPPORTED when hvdc was built without UCX.
Status create_ucx_transport(const UcxOptions& options, const AddressExchange& exchange,
                            std::unique_ptr<Transport>* out);

}  // namespace hvdc::transport
