// Data in the round: a cached allreduce of host memory small enough goes out with its input in
// the round message that announces it ready. Once the round completes, every member holds every
// member's input of each tensor the round agreed on and reduces them itself, so the op needs no
// exchange of its own: one exchange per small op instead of two. Every rank decides from the
// same round messages, so either every member of a set uses the inputs of an op or none does
// (none when a member sent no input for it: another HVDC_ROUND_INPUT_BYTES, a full message, a
// joined rank). A sender whose tensor the round does not agree on sends its input again with
// the next round.
#include "common/dtype.h"
#include "core/negotiation/negotiation.h"
#include "hvdc.h"

namespace hvdc::core {

// Bytes of r's input if it may go out with the round, else 0. Integer averages widen before
// they reduce and prescaled inputs are scaled first: both take the usual path.
size_t Negotiation::round_input_size(const SetState& set, const Request& r) const {
  if (config_.round_input_bytes == 0 || tree_ || set.info.ranks.size() < 2) return 0;
  if (r.op_type != OpType::kAllreduce || r.device_type != HVD_DEVICE_CPU || r.prescale != 1.0) {
    return 0;
  }
  if (r.reduce_op == HVD_OP_AVERAGE && !common::dtype_is_float(r.dtype)) return 0;
  const size_t bytes = element_count(r.shape) * common::dtype_size(r.dtype);
  return bytes <= config_.round_input_bytes ? bytes : 0;
}

// The inputs of this rank's ready tensors, while they fit the message's budget.
void Negotiation::add_round_inputs(RoundMessage* mine) {
  if (self_joined_) return;  // the ranks that joined contribute zeros the usual way
  size_t budget = config_.round_input_bytes;
  for (auto& [id, set] : *ctx_.sets) {
    for (const auto& [name, hit] : set->pending_hits) {
      if (hit.input == nullptr || hit.input_bytes > budget) continue;
      budget -= hit.input_bytes;
      RoundInput input;
      input.process_set = id;
      input.slot = hit.slot;
      input.data = static_cast<const char*>(hit.input);
      input.size = hit.input_bytes;
      mine->inputs.push_back(std::move(input));
    }
  }
}

namespace {

const RoundInput* input_of(const RoundMessage& m, int32_t set, uint32_t slot) {
  for (const RoundInput& input : m.inputs) {
    if (input.process_set == set && input.slot == slot) return &input;
  }
  return nullptr;
}

}  // namespace

// Gives `cached` (the response in `slot` of `set`) every member's input, if every member sent
// one of the agreed size.
void Negotiation::attach_round_inputs(const SetState& set, uint32_t slot,
                                      const std::vector<std::unique_ptr<RoundMessage>>& messages,
                                      Response* cached) {
  if (cached->op_type != OpType::kAllreduce || cached->device_type != HVD_DEVICE_CPU) return;
  const size_t bytes = response_bytes(*cached);
  for (int member : set.info.ranks) {
    const RoundInput* input = input_of(*messages[member], set.info.id, slot);
    if (input == nullptr || input->size != bytes) return;
  }
  std::shared_ptr<RoundInputs> inputs = spare_round_inputs();
  inputs->members.resize(1);
  std::vector<const char*>& views = inputs->members.back();
  views.clear();
  inputs->keep.clear();
  views.reserve(set.info.ranks.size());
  inputs->keep.reserve(set.info.ranks.size());
  for (int member : set.info.ranks) {
    const RoundInput* input = input_of(*messages[member], set.info.id, slot);
    views.push_back(input->data);
    if (input->owner) inputs->keep.push_back(input->owner);
  }
  cached->inputs = std::move(inputs);
}

}  // namespace hvdc::core
