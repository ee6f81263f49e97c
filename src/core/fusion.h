// Tensor fusion: compatible ready allreduces run as one collective over the list of their
// buffers (a backend sees one tensor each), so many small gradients cost one negotiation-free
// collective instead of one each. Every rank fuses the same response list the same way.
#pragma once

#include <cstddef>
#include <vector>

#include "core/message.h"

namespace hvdc::core {

// Two responses may share a collective: both successful allreduces of the same process set with
// the same dtype, reduce op, scale factors and device (type and id), and either both or neither
// with their members' inputs from the round (RoundInputs).
bool fusable(const Response& a, const Response& b);

// Merges each allreduce with the later compatible ones (looking past incompatible responses in
// between) while the fused size stays within `threshold` bytes. The list keeps the order of
// each group's first member. threshold 0 disables fusion.
std::vector<Response> fuse_responses(std::vector<Response> responses, size_t threshold);

}  // namespace hvdc::core
