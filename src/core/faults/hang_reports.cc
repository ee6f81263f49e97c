// Hang forensics: a report of every op in flight on this rank (name, process set, size, phase,
// age) plus, where this rank coordinates a set, which ranks its waiting tensors lack. Written as
// one block in the log on request (hvd_dump_pending, SIGUSR1) and when an op has waited past
// the stall check time here.
#include "common/dtype.h"
#include "common/log.h"
#include "core/engine.h"

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

void Engine::request_dump() noexcept {
  dump_requested_.store(true, std::memory_order_release);
  queue_.wake();
}

Status Engine::dump_pending(int timeout_ms, std::string* text) {
  std::unique_lock<std::mutex> lock(dump_mutex_);
  const uint64_t before = dump_generation_;
  request_dump();
  if (!dump_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                         [&] { return dump_generation_ != before; })) {
    return common::make_error(HVD_ERR_TIMEOUT,
                              "the engine thread did not answer within %d ms (it may be blocked "
                              "outside hvdc, e.g. in a completion callback)",
                              timeout_ms);
  }
  *text = last_dump_;
  return Status::ok();
}

bool Engine::poll_dump_request() {
  if (!dump_requested_.exchange(false, std::memory_order_acq_rel)) return false;
  write_dump("requested (hvd_dump_pending or SIGUSR1)");
  return true;
}

// An op older than the stall check time gets a report here too (at most once per check period),
// so every rank's view of a hang is in its log, not only the coordinator's "Missing ranks".
void Engine::check_local_stall(Clock::time_point now, Clock::duration oldest_age) {
  if (config_.stall_check_seconds <= 0 || now < local_stall_quiet_until_) return;
  const auto limit = std::chrono::seconds(config_.stall_check_seconds);
  if (oldest_age < limit) return;
  local_stall_quiet_until_ = now + limit;
  write_dump(common::strfmt("an op has waited more than %d s (HVDC_STALL_CHECK_TIME)",
                            config_.stall_check_seconds));
}

void Engine::write_dump(const std::string& why) {
  const std::string text = describe_pending();
  // Lines end in '\n'; the log adds its own after the block.
  HVDC_LOG_WARNING("hang report, %s:\n%.*s", why.c_str(), static_cast<int>(text.size() - 1),
                   text.c_str());
  std::lock_guard<std::mutex> lock(dump_mutex_);
  last_dump_ = text;
  ++dump_generation_;
  dump_cv_.notify_all();
}

std::string Engine::describe_pending() {
  // Agreed responses (waiting to run, possibly fused) and the one running, by (set, name).
  std::map<std::pair<int32_t, std::string>, std::string> agreed;
  for (const Response& r : responses_) {
    for (const std::string& name : r.names) {
      agreed[{r.process_set, name}] =
          r.names.size() > 1 ? common::strfmt("fused (%zu tensors)", r.names.size()) : "agreed";
    }
  }
  if (executing_response_ != nullptr) {
    for (const std::string& name : executing_response_->names) {
      agreed[{executing_response_->process_set, name}] = "transferring";
    }
  }
  const Clock::time_point now = Clock::now();
  const std::vector<PendingOp> ops = queue_.snapshot();
  std::string text = common::strfmt("rank %d: %zu ops in flight\n", topology_.rank, ops.size());
  for (const PendingOp& op : ops) {
    const Request& r = op.request;
    std::string phase = op.reported ? "negotiating" : "queued";
    auto it = agreed.find({r.process_set, r.name});
    if (it != agreed.end()) phase = it->second;
    const SetState* set = member_set(r.process_set);
    if (phase == "negotiating" && set != nullptr && set->pending_hits.count(r.name) != 0) {
      phase += " (cached)";
    }
    const double age = std::chrono::duration<double>(now - op.submitted).count();
    text += common::strfmt("  '%s' %s, process set %d%s, %s, age %.1f s\n", r.name.c_str(),
                           op_type_name(r.op_type), r.process_set, size_text(r).c_str(),
                           phase.c_str(), age);
  }
  for (const auto& [id, set] : sets_) {
    if (!set->controller) continue;
    const std::string waiting = set->controller->describe_waiting();
    if (waiting.empty()) continue;
    text += common::strfmt("as coordinator of %s:\n%s",
                           describe_process_set(id, set->info.ranks).c_str(), waiting.c_str());
  }
  return text;
}

}  // namespace hvdc::core
