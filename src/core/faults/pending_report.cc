// The text of a hang report (pending_report.h).
#include "core/faults/pending_report.h"

#include "common/dtype.h"

namespace hvdc::core {

using Clock = std::chrono::steady_clock;

namespace {

bool carries_data(OpType type) {
  return static_cast<int>(type) <= static_cast<int>(OpType::kReducescatter) &&
         type != OpType::kBarrier;
}

std::string size_text(const Request& r) {
  if (!carries_data(r.op_type)) return "";
  const double bytes = static_cast<double>(element_count(r.shape) * common::dtype_size(r.dtype));
  const char* unit = "B";
  double value = bytes;
  for (const char* next : {"KiB", "MiB", "GiB"}) {
    if (value < 1024) break;
    value /= 1024;
    unit = next;
  }
  return common::strfmt(", %s %s (%.1f %s)", common::dtype_name(r.dtype),
                        shape_string(r.shape).c_str(), value, unit);
}

}  // namespace

std::string describe_pending(const PendingView& view) {
  // Agreed responses (waiting to run, possibly fused) and the one running, by (set, name).
  std::map<std::pair<int32_t, std::string>, std::string> agreed;
  for (const Response& r : view.agreed) {
    for (const std::string& name : r.names) {
      agreed[{r.process_set, name}] =
          r.names.size() > 1 ? common::strfmt("fused (%zu tensors)", r.names.size()) : "agreed";
    }
  }
  for (const Response* running : view.running) {
    for (const std::string& name : running->names) {
      agreed[{running->process_set, name}] = "transferring";
    }
  }
  const Clock::time_point now = Clock::now();
  const std::vector<PendingOp>& ops = view.ops;
  std::string text = common::strfmt("rank %d: %zu ops in flight\n", view.rank, ops.size());
  for (const PendingOp& op : ops) {
    const Request& r = op.request;
    std::string phase = op.reported ? "negotiating" : "queued";
    auto it = agreed.find({r.process_set, r.name});
    if (it != agreed.end()) phase = it->second;
    auto set = view.sets.find(r.process_set);
    if (phase == "negotiating" && set != view.sets.end() &&
        set->second->pending_hits.count(r.name) != 0) {
      phase += " (cached)";
    }
    const double age = std::chrono::duration<double>(now - op.submitted).count();
    text += common::strfmt("  '%s' %s, process set %d%s, %s, age %.1f s\n", r.name.c_str(),
                           op_type_name(r.op_type), r.process_set, size_text(r).c_str(),
                           phase.c_str(), age);
  }
  for (const auto& [id, set] : view.sets) {
    if (!set->controller) continue;
    const std::string waiting = set->controller->describe_waiting();
    if (waiting.empty()) continue;
    text += common::strfmt("as coordinator of %s:\n%s",
                           describe_process_set(id, set->info.ranks).c_str(), waiting.c_str());
  }
  return text;
}

}  // namespace hvdc::core
