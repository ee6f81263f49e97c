// Negotiation of tensors the response cache cannot settle: ranks report them to the coordinator
// (rank 0), which checks that every rank's metadata agrees once all have reported a name. Its
// responses reach the ranks through the next round (rounds.cc).
#include "common/log.h"
#include "core/engine.h"

namespace hvdc::core {

using transport::make_tag;
using transport::TagKind;

bool Engine::report_local_requests() {
  std::vector<Request> fresh = queue_.pop_new();
  if (fresh.empty()) return false;
  std::vector<Request> uncached;
  for (Request& r : fresh) {
    if (r.op_type == OpType::kJoin) {
      self_joined_ = true;  // from now on this rank contributes zeros
      round_wanted_ = true;
    }
    uint32_t slot = 0;
    switch (cache_.lookup(r, &slot)) {
      case ResponseCache::Lookup::kHit:
        pending_hits_[r.name] = PendingHit{slot, std::chrono::steady_clock::now()};
        round_wanted_ = true;
        break;
      case ResponseCache::Lookup::kInvalid:
        set_bit(invalid_bits_, slot);
        round_wanted_ = true;
        uncached.push_back(std::move(r));
        break;
      case ResponseCache::Lookup::kMiss:
        uncached.push_back(std::move(r));
        break;
    }
  }
  send_uncached(std::move(uncached));
  return true;
}

void Engine::send_uncached(std::vector<Request> requests) {
  if (requests.empty()) return;
  stats_.cache_misses += requests.size();
  if (controller_) {
    for (Request& r : requests) controller_->add(topology_.rank, std::move(r));
    return;
  }
  ++stats_.coordinator_requests;
  RequestList list;
  list.requests = std::move(requests);
  Status st =
      transport_->send_message(0, make_tag(TagKind::kRequestList, topology_.rank, 0), encode(list));
  if (!st.is_ok()) terminate(st.with_context("reporting ready tensors to rank 0"), true);
}

bool Engine::coordinate() {
  if (!controller_) return false;
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (transport_ && transport_->poll_message(make_tag(TagKind::kRequestList, 0, 0),
                                                transport::kTagKindMask, &tag, &bytes)) {
    busy = true;
    RequestList list;
    Status st = decode(bytes, &list);
    if (!st.is_ok()) {
      // Which tensors it named is unknown, so they could never complete: fail everything
      // rather than let the ranks wait.
      terminate(
          st.with_context(common::strfmt("request list from rank %d", transport::tag_source(tag))),
          true);
      return true;
    }
    for (Request& r : list.requests) controller_->add(transport::tag_source(tag), std::move(r));
  }
  std::vector<Response> ready = controller_->take_ready();
  for (Response& r : controller_->check_stalls(std::chrono::steady_clock::now())) {
    ready.push_back(std::move(r));
  }
  if (ready.empty()) return busy;
  for (Response& r : ready) coordinator_out_.push_back(std::move(r));
  round_wanted_ = true;
  return true;
}

}  // namespace hvdc::core
