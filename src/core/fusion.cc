#include "core/fusion.h"

namespace hvdc::core {
namespace {

void merge_inputs(RoundInputs* into, RoundInputs& more) {
  for (auto& members : more.members) into->members.push_back(std::move(members));
  for (auto& keep : more.keep) into->keep.push_back(std::move(keep));
}

}  // namespace

bool fusable(const Response& a, const Response& b) {
  return a.kind == ResponseKind::kExecute && b.kind == ResponseKind::kExecute &&
         a.process_set == b.process_set && a.op_type == OpType::kAllreduce &&
         b.op_type == OpType::kAllreduce && a.dtype == b.dtype && a.reduce_op == b.reduce_op &&
         a.prescale == b.prescale && a.postscale == b.postscale && a.device_type == b.device_type &&
         a.device_id == b.device_id && a.flags == b.flags &&
         (a.inputs == nullptr) == (b.inputs == nullptr);
}

std::vector<Response> fuse_responses(std::vector<Response> responses, size_t threshold) {
  if (threshold == 0 || responses.size() < 2) return responses;
  std::vector<Response> out;
  std::vector<bool> taken(responses.size(), false);
  for (size_t i = 0; i < responses.size(); ++i) {
    if (taken[i]) continue;
    Response fused = std::move(responses[i]);
    taken[i] = true;
    size_t bytes = response_bytes(fused);
    if (fused.op_type == OpType::kAllreduce && fused.kind == ResponseKind::kExecute) {
      for (size_t j = i + 1; j < responses.size() && bytes < threshold; ++j) {
        if (taken[j] || !fusable(fused, responses[j])) continue;
        const size_t more = response_bytes(responses[j]);
        if (bytes + more > threshold) continue;
        for (std::string& name : responses[j].names) fused.names.push_back(std::move(name));
        for (int64_t c : responses[j].counts) fused.counts.push_back(c);
        if (fused.inputs) merge_inputs(fused.inputs.get(), *responses[j].inputs);
        bytes += more;
        taken[j] = true;
      }
    }
    out.push_back(std::move(fused));
  }
  return out;
}

}  // namespace hvdc::core
