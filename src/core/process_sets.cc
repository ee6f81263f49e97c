// Process sets in the engine: the static ones from HVDC_PROCESS_SETS, and creation and removal
// at run time. Creation and removal are ops on set 0 that every rank submits; they run at the
// same point of every rank's execution order, which is what keeps set ids, transport contexts
// and caches the same everywhere without further messages.
#include "common/log.h"
#include "core/engine.h"

namespace hvdc::core {

using common::make_error;

namespace {

std::string format_sets(const std::vector<std::vector<int>>& sets) {
  std::string out;
  for (const std::vector<int>& ranks : sets) {
    if (!out.empty()) out += ';';
    for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  }
  return out;
}

}  // namespace

// Every rank must start with the same static sets; a rank whose HVDC_PROCESS_SETS differs
// makes init fail everywhere instead of leaving the ranks with different tables.
Status Engine::add_static_process_sets() {
  std::vector<std::vector<int>> sets;
  Status parsed = parse_process_sets(config_.process_sets, topology_.size, &sets);
  const std::string mine = parsed.is_ok() ? format_sets(sets) : "!" + parsed.message();
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(*bootstrap_, mine, &all));
  HVDC_RETURN_IF_ERROR(parsed);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == mine) continue;
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "HVDC_PROCESS_SETS differs between ranks: rank %d has '%s', rank %zu has "
                      "'%s'",
                      topology_.rank, mine.c_str(), r,
                      all[r].empty() || all[r][0] != '!' ? all[r].c_str() : "an invalid value");
  }
  for (const std::vector<int>& ranks : sets) {
    ProcessSetInfo info;
    HVDC_RETURN_IF_ERROR(process_sets_->add(ranks, &info).with_context("HVDC_PROCESS_SETS"));
    add_set_state(info);
  }
  if (!sets.empty() && topology_.rank == 0) {
    HVDC_LOG_INFO("static process sets: %s", mine.c_str());
  }
  return Status::ok();
}

void Engine::add_set_state(const ProcessSetInfo& info) {
  if (info.index < 0) return;  // only members negotiate and execute the set's ops
  auto set = std::make_unique<SetState>(info, config_.cache_capacity);
  if (set->coordinator()) {
    set->controller = std::make_unique<Controller>(set->size(), config_.stall_check_seconds,
                                                   config_.stall_shutdown_seconds);
    if (info.id != 0) set->controller->set_process_set(info.id, info.ranks);
  }
  sets_[info.id] = std::move(set);
}

SetState* Engine::member_set(int32_t id) {
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second.get();
}

Status Engine::create_process_set(const Response& response, std::vector<TensorEntry>& entries) {
  const std::vector<int> ranks(response.sizes.begin(), response.sizes.end());
  ProcessSetInfo info;
  HVDC_RETURN_IF_ERROR(process_sets_->add(ranks, &info));
  add_set_state(info);
  auto early = early_requests_.find(info.id);  // members that created it sooner submitted
  if (early != early_requests_.end()) {
    for (auto& [from, list] : early->second) add_remote_requests(from, std::move(list));
    early_requests_.erase(early);
  }
  for (TensorEntry& entry : entries) entry.state->set_result_value(info.id);
  HVDC_LOG_DEBUG("created %s", describe_process_set(info.id, info.ranks).c_str());
  return Status::ok();
}

Status Engine::destroy_process_set(const Response& response) {
  const int32_t id = response.root;
  HVDC_RETURN_IF_ERROR(process_sets_->remove(id));
  if (sets_.erase(id) == 0) return Status::ok();
  const Status gone = make_error(HVD_ERR_INVALID_USAGE,
                                 "process set %d was destroyed while this op was pending", id);
  for (TensorEntry& entry : queue_.take_set(id)) entry.state->complete(gone);
  return Status::ok();
}

}  // namespace hvdc::core
