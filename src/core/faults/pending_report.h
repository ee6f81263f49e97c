// What a hang report says: every op in flight on this rank (name, process set, size, phase,
// age) plus, where this rank coordinates a set, which ranks its waiting tensors lack.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/set_state.h"
#include "core/tensor_queue.h"

namespace hvdc::core {

// The engine's state that a report reads (engine thread).
struct PendingView {
  int rank = 0;
  std::vector<PendingOp> ops;            // submitted and not completed, oldest first
  const std::deque<Response>& agreed;    // agreed, not yet started
  std::vector<const Response*> running;  // started, not yet finished
  const std::map<int32_t, std::unique_ptr<SetState>>& sets;  // this rank's sets
};

std::string describe_pending(const PendingView& view);

}  // namespace hvdc::core
