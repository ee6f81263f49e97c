// The small host messages that set up a device communicator, over the engine's own transport
// (tag kind kDevice, numbered by the op that needs the communicator, so they are ordered like
// every other op's messages): every member tells the first member something, and the first
// member tells every member something.
#pragma once

#include <string>
#include <vector>

#include "ops/backend.h"

namespace hvdc::ops::nccl {

// Each member's `mine` (all of the same size) reaches the first member: *all gets them in member
// order there, and stays empty elsewhere. `step` tells this exchange from the op's others.
Status gather_to_first(const Group& group, int step, const std::string& mine,
                       std::vector<std::string>* all);
// The first member's `*bytes` (the same size everywhere) replaces every other member's.
Status send_from_first(const Group& group, int step, std::string* bytes);

}  // namespace hvdc::ops::nccl
