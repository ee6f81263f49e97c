// The UCX transport: one context, one worker progressed by the engine thread, an endpoint per
// peer with peer error handling (a dead peer becomes an error, not a hang).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace hvdc::transport {

// Gathers every rank's worker address; provided by the layer above (the bootstrap).
using AddressExchange =
    std::function<Status(const std::string& mine, std::vector<std::string>* all)>;

struct UcxOptions {
  int rank = 0;
  int size = 1;
  int spin_micros = 50;
  // A wait in which nothing moves for this long fails with HVD_ERR_TIMEOUT naming the peers it
  // waits for (a stopped or hung peer); 0 waits forever.
  double progress_timeout_seconds = 0;
};

// HVD_ERR_UNSUPPORTED when hvdc was built without UCX.
Status create_ucx_transport(const UcxOptions& options, const AddressExchange& exchange,
                            std::unique_ptr<Transport>* out);

}  // namespace hvdc::transport
