// Negotiation of tensors the response cache cannot settle: ranks report them to the coordinator
// of their process set (its first member), which checks that every member's metadata agrees
// once all have reported a name. Its responses reach the ranks through the next round
// (rounds.cc).
#include "core/negotiation/negotiation.h"

#include <algorithm>

#include "common/log.h"

namespace hvdc::core {

using transport::make_tag;
using transport::TagKind;

SetState* Negotiation::member_set(int32_t id) {
  auto it = ctx_.sets->find(id);
  return it == ctx_.sets->end() ? nullptr : it->second.get();
}

bool Negotiation::report_local_requests() {
  const size_t fresh = ctx_.queue->pop_new(&fresh_requests_, &fresh_buffers_);
  if (fresh == 0) return false;
  std::map<SetState*, std::vector<Request>> uncached;
  for (size_t i = 0; i < fresh; ++i)
    report_request(fresh_requests_[i], fresh_buffers_[i], &uncached);
  for (auto& [set, requests] : uncached) send_uncached(*set, std::move(requests));
  return true;
}

void Negotiation::report(Request request) {
  std::map<SetState*, std::vector<Request>> uncached;
  report_request(request, OpBuffers(), &uncached);
  for (auto& [set, requests] : uncached) send_uncached(*set, std::move(requests));
}

void Negotiation::report_request(Request& r, const OpBuffers& buffers,
                                 std::map<SetState*, std::vector<Request>>* uncached) {
  SetState* set = member_set(r.process_set);
  if (set == nullptr) {
    // Destroyed after the API checked it; the destruction failed everything pending before.
    TensorEntry entry;
    if (ctx_.queue->take(r.process_set, r.name, &entry)) {
      entry.state->complete(common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                               "process set %d was destroyed before '%s' could run",
                                               r.process_set, r.name.c_str()));
    }
    return;
  }
  if (r.op_type == OpType::kJoin) {
    self_joined_ = true;  // from now on this rank contributes zeros
    round_wanted_ = true;
  }
  uint32_t slot = 0;
  switch (set->cache.lookup(r, &slot)) {
    case ResponseCache::Lookup::kHit: {
      if (ctx_.lane_offer && ctx_.lane_offer(*set, r, slot, buffers)) break;
      PendingHit hit{slot, std::chrono::steady_clock::now()};
      const size_t bytes = round_input_size(*set, r);
      if (bytes > 0) {
        hit.input = ctx_.queue->input_of(r.process_set, r.name);
        hit.input_bytes = hit.input ? static_cast<uint32_t>(bytes) : 0;
      }
      set->add_pending_hit(r.name, hit);
      round_wanted_ = true;
      break;
    }
    case ResponseCache::Lookup::kInvalid:
      set_bit(set->invalid_bits, slot);
      round_wanted_ = true;
      (*uncached)[set].push_back(std::move(r));
      break;
    case ResponseCache::Lookup::kMiss:
      (*uncached)[set].push_back(std::move(r));
      break;
  }
}

void Negotiation::send_uncached(SetState& set, std::vector<Request> requests) {
  if (requests.empty()) return;
  ctx_.stats->cache_misses += requests.size();
  if (set.controller) {
    for (Request& r : requests) set.controller->add(set.info.index, std::move(r));
    return;
  }
  ++ctx_.stats->coordinator_requests;
  RequestList list;
  list.requests = std::move(requests);
  const int coordinator = set.info.ranks[0];
  Status st = ctx_.transport->send_message(
      coordinator, make_tag(TagKind::kRequestList, config_.rank, 0), encode(list));
  if (!st.is_ok()) {
    ctx_.fail(st.with_context(common::strfmt("reporting ready tensors to rank %d", coordinator)));
  }
}

bool Negotiation::coordinate(Clock::time_point now) {
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (ctx_.transport && ctx_.transport->poll_message(make_tag(TagKind::kRequestList, 0, 0),
                                                        transport::kTagKindMask, &tag, &bytes)) {
    busy = true;
    RequestList list;
    const int from = transport::tag_source(tag);
    Status st = decode(bytes, &list);
    for (size_t i = 0; st.is_ok() && i < list.requests.size(); ++i) {
      st = check_request(list.requests[i]);
    }
    if (!st.is_ok()) {
      // Which tensors it named is unknown, so they could never complete: fail everything
      // rather than let the ranks wait.
      ctx_.fail(st.with_context(common::strfmt("request list from rank %d", from)));
      return true;
    }
    add_remote_requests(from, std::move(list));
  }
  for (auto& [id, set] : *ctx_.sets) busy |= take_coordinated(*set, now);
  return busy;
}

// Requests of a set this rank coordinates. A member that ran the set's creation first may
// submit on it before the creation runs here: such a request waits for it (ids are never
// reused, so an id not created yet is such a set; release_early_requests). One for a set
// destroyed meanwhile is dropped: the destruction already failed it on its rank.
void Negotiation::add_remote_requests(int from, RequestList list) {
  for (Request& r : list.requests) {
    SetState* set = member_set(r.process_set);
    if (set == nullptr && !ctx_.table->ever_created(r.process_set)) {
      early_requests_[r.process_set][from].requests.push_back(std::move(r));
      continue;
    }
    if (set == nullptr || !set->controller) continue;
    const auto& ranks = set->info.ranks;
    auto it = std::lower_bound(ranks.begin(), ranks.end(), from);
    if (it == ranks.end() || *it != from) {
      HVDC_LOG_ERROR("rank %d reported '%s' for process set %d, which it is not a member of", from,
                     r.name.c_str(), r.process_set);
      continue;
    }
    set->controller->add(static_cast<int>(it - ranks.begin()), std::move(r));
  }
}

// Moves what the set's coordinator negotiated (or failed as stalled) into the next round.
void Negotiation::release_early_requests() {
  for (auto it = early_requests_.begin(); it != early_requests_.end();) {
    if (!ctx_.table->ever_created(it->first)) {
      ++it;
      continue;
    }
    std::map<int, RequestList> held = std::move(it->second);
    it = early_requests_.erase(it);
    for (auto& [from, list] : held) add_remote_requests(from, std::move(list));
  }
}

bool Negotiation::take_coordinated(SetState& set, Clock::time_point now) {
  if (!set.controller) return false;
  std::vector<Response> ready = set.controller->take_ready();
  for (Response& r : set.controller->check_stalls(now)) {
    ready.push_back(std::move(r));
  }
  if (ready.empty()) return false;
  for (Response& r : ready) set.coordinator_out.push_back(std::move(r));
  round_wanted_ = true;
  return true;
}

}  // namespace hvdc::core
