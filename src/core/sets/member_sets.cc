// Process sets in the engine: the static ones from HVDC_PROCESS_SETS, and creation and removal
// at run time. Creation and removal are ops on set 0 that every rank submits; they run at the
// same point of every rank's execution order, which is what keeps set ids, transport contexts
// and caches the same everywhere without further messages.
#include "core/sets/member_sets.h"

#include "common/log.h"

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

MemberSets::MemberSets(int size, int rank, const MemberSetsConfig& config)
    : config_(config), rank_(rank), table_(size, rank) {
  ProcessSetInfo global;
  (void)table_.find(0, &global);  // set 0 always exists
  add(global);
}

// Every rank must start with the same static sets; a rank whose HVDC_PROCESS_SETS differs
// makes init fail everywhere instead of leaving the ranks with different tables.
Status MemberSets::add_static(const std::string& spec, bootstrap::Bootstrap& bootstrap) {
  std::vector<std::vector<int>> sets;
  Status parsed = parse_process_sets(spec, bootstrap.size(), &sets);
  const std::string mine = parsed.is_ok() ? format_sets(sets) : "!" + parsed.message();
  std::vector<std::string> all;
  HVDC_RETURN_IF_ERROR(bootstrap::allgather_strings(bootstrap, mine, &all));
  HVDC_RETURN_IF_ERROR(parsed);
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == mine) continue;
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "HVDC_PROCESS_SETS differs between ranks: rank %d has '%s', rank %zu has "
                      "'%s'",
                      rank_, mine.c_str(), r,
                      all[r].empty() || all[r][0] != '!' ? all[r].c_str() : "an invalid value");
  }
  for (const std::vector<int>& ranks : sets) {
    ProcessSetInfo info;
    HVDC_RETURN_IF_ERROR(table_.add(ranks, &info).with_context("HVDC_PROCESS_SETS"));
    add(info);
  }
  if (!sets.empty() && rank_ == 0) {
    HVDC_LOG_INFO("static process sets: %s", mine.c_str());
  }
  return Status::ok();
}

void MemberSets::add(const ProcessSetInfo& info) {
  if (info.index < 0) return;  // only members negotiate and execute the set's ops
  auto set = std::make_unique<SetState>(info, config_.cache_capacity);
  if (set->coordinator()) {
    set->controller = std::make_unique<Controller>(set->size(), config_.stall_check_seconds,
                                                   config_.stall_shutdown_seconds);
    if (info.id != 0) set->controller->set_process_set(info.id, info.ranks);
  }
  members_[info.id] = std::move(set);
}

SetState* MemberSets::member(int32_t id) {
  auto it = members_.find(id);
  return it == members_.end() ? nullptr : it->second.get();
}

Status MemberSets::create(const Response& response, std::vector<TensorEntry>& entries) {
  const std::vector<int> ranks(response.sizes.begin(), response.sizes.end());
  ProcessSetInfo info;
  HVDC_RETURN_IF_ERROR(table_.add(ranks, &info));
  add(info);
  for (TensorEntry& entry : entries) entry.state->set_result_value(info.id);
  HVDC_LOG_DEBUG("created %s", describe_process_set(info.id, info.ranks).c_str());
  return Status::ok();
}

Status MemberSets::destroy(const Response& response, TensorQueue& queue) {
  const int32_t id = response.root;
  HVDC_RETURN_IF_ERROR(table_.remove(id));
  if (members_.erase(id) == 0) return Status::ok();
  const Status gone = make_error(HVD_ERR_INVALID_USAGE,
                                 "process set %d was destroyed while this op was pending", id);
  for (TensorEntry& entry : queue.take_set(id)) entry.state->complete(gone);
  return Status::ok();
}

}  // namespace hvdc::core
