// Broadcasting model state from one rank, the other half of Horovod's workflow: every rank builds
// its model with its own random initialisation, then takes rank 0's values, so all ranks start
// from the same point. A resume broadcasts what rank 0 loaded, and the trainer broadcasts after
// an epoch with uneven shards (see training_loop.cc).
#pragma once

#include <string>
#include <vector>

#include "optimizer.h"
#include "parameter.h"

namespace trainer {

// Every parameter's value takes root_rank's value (named "param.<name>").
void broadcast_parameters(ParameterDict& params, int root_rank);
// Every optimizer state tensor takes root_rank's value (named "<prefix>.<index>").
void broadcast_tensors(const std::vector<Tensor*>& tensors, int root_rank,
                       const std::string& prefix);

}  // namespace trainer
