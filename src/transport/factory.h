// How the engine gets its transport: a factory it is given (UCX in production, the in-process
// loopback in tests), so that core never names an implementation.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace hvdc::transport {

// Gathers every rank's connection address; provided by the layer above (the bootstrap).
using AddressExchange =
    std::function<Status(const std::string& mine, std::vector<std::string>* all)>;

struct TransportOptions {
  int rank = 0;
  int size = 1;
  int spin_micros = 50;
  // A wait in which nothing moves for this long fails with HVD_ERR_TIMEOUT naming the peers it
  // waits for (a stopped or hung peer); 0 waits forever.
  double progress_timeout_seconds = 0;
};

// Connects this rank to every other; collective over the ranks (each calls it once).
using TransportFactory = std::function<Status(
    const TransportOptions& options, const AddressExchange& exchange, std::unique_ptr<Transport>*)>;

}  // namespace hvdc::transport
