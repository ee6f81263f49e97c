// Rounds of agreement. A round is an exchange in which every rank sends every other rank one
// RoundMessage: the cache slots of tensors it has ready, the slots it found stale, and (from
// the coordinator) newly negotiated responses. Any rank with something new to announce starts
// the next round; a rank that hears of a round it has not joined joins it at once with what it
// has. Once a rank holds all messages of a round it computes, like every other rank, the same
// list: the coordinator's responses, then the cached tensors ready everywhere (the AND of the
// hit bits) in slot order. Rounds complete in the same order everywhere, so every rank executes
// the same collectives in the same order, and warm steps never wait for the coordinator.
#include "common/log.h"
#include "core/engine.h"
#include "core/fusion.h"

namespace hvdc::core {

using transport::make_tag;
using transport::TagKind;

bool Engine::progress_rounds() {
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (transport_ && transport_->poll_message(make_tag(TagKind::kRound, 0, 0),
                                                transport::kTagKindMask, &tag, &bytes)) {
    busy = true;
    auto msg = std::make_unique<RoundMessage>();
    const int from = transport::tag_source(tag);
    Status st = decode(bytes, msg.get());
    if (!st.is_ok() || msg->round <= round_) {
      // A lost or garbled round would leave the ranks disagreeing on what to run.
      terminate((st.is_ok() ? common::make_error(HVD_ERR_INTERNAL, "stale round %llu",
                                                 static_cast<unsigned long long>(msg->round))
                            : st)
                    .with_context(common::strfmt("round message from rank %d", from)),
                true);
      return true;
    }
    auto& slot = inbox_[msg->round];
    slot.resize(topology_.size);
    slot[from] = std::move(msg);
  }
  if (!terminated_.is_ok()) return busy;
  const bool peer_started = inbox_.count(round_ + 1) != 0;
  if (!in_round_ && (round_wanted_ || peer_started)) {
    send_round_message();
    busy = true;
  }
  if (in_round_) {
    const auto& messages = inbox_[round_ + 1];
    for (const auto& m : messages) {
      if (!m) return busy;
    }
    complete_round();
    busy = true;
  }
  return busy;
}

void Engine::send_round_message() {
  auto mine = std::make_unique<RoundMessage>();
  mine->round = round_ + 1;
  mine->hits.assign(cache_.words(), 0);
  for (const auto& [name, hit] : pending_hits_) set_bit(mine->hits, hit.slot);
  if (self_joined_) {
    // Having joined, this rank agrees to every cached allreduce: it will contribute zeros.
    mine->joined = 1;
    for (uint32_t slot = 0; slot < cache_.capacity(); ++slot) {
      if (cache_.used(slot) && cache_.response(slot).op_type == OpType::kAllreduce) {
        set_bit(mine->hits, slot);
      }
    }
  }
  mine->invalid = invalid_bits_;
  invalid_bits_.assign(cache_.words(), 0);
  mine->responses.responses = std::move(coordinator_out_);
  coordinator_out_.clear();
  round_wanted_ = false;
  in_round_ = true;
  if (transport_) {
    const std::string encoded = encode(*mine);
    for (int p = 0; p < topology_.size; ++p) {
      if (p == topology_.rank) continue;
      Status st = transport_->send_message(
          p, make_tag(TagKind::kRound, topology_.rank, mine->round), encoded);
      if (!st.is_ok()) {
        terminate(st.with_context("sending a round message"), true);
        return;
      }
    }
  }
  auto& slot = inbox_[mine->round];
  slot.resize(topology_.size);
  slot[topology_.rank] = std::move(mine);
}

void Engine::complete_round() {
  auto node = inbox_.extract(round_ + 1);
  std::vector<std::unique_ptr<RoundMessage>>& messages = node.mapped();
  std::vector<uint64_t> hits = messages[0]->hits, invalid(cache_.words(), 0);
  // A joined rank reports every cached allreduce as ready; a tensor runs only when some rank
  // that has not joined actually submitted it.
  std::vector<uint64_t> wanted(hits.size(), 0);
  for (const auto& m : messages) {
    for (size_t w = 0; w < hits.size(); ++w) {
      const uint64_t bits = w < m->hits.size() ? m->hits[w] : 0;
      hits[w] &= bits;
      if (!m->joined) wanted[w] |= bits;
      invalid[w] |= w < m->invalid.size() ? m->invalid[w] : 0;
    }
  }
  for (size_t w = 0; w < hits.size(); ++w) hits[w] &= wanted[w];
  trace_cached_negotiation(messages, hits);
  bool peer_joined = false;
  for (const auto& m : messages) peer_joined |= m->joined != 0;
  if (peer_joined) demote_unjoinable_hits();
  std::vector<Response> list = std::move(messages[0]->responses.responses);
  std::vector<Response> cached = take_cache_hits(hits);
  for_each_set_bit(invalid, [&](uint32_t slot) { cache_.erase(slot); });
  cache_responses(list);
  for (Response& r : cached) list.push_back(std::move(r));
  ++round_;
  in_round_ = false;
  ++stats_.rounds;
  revalidate_pending_hits();
  trace_queued(list);
  for (Response& r : fuse_responses(std::move(list), config_.fusion_threshold)) {
    responses_.push_back(std::move(r));
  }
}

std::vector<Response> Engine::take_cache_hits(const std::vector<uint64_t>& hits) {
  std::vector<Response> out;
  for_each_set_bit(hits, [&](uint32_t slot) {
    out.push_back(cache_.response(slot));
    cache_.touch(slot);
    pending_hits_.erase(out.back().names[0]);
  });
  stats_.cache_hits += out.size();
  return out;
}

void Engine::cache_responses(const std::vector<Response>& responses) {
  for (const Response& r : responses) {
    if (!ResponseCache::cacheable(r) || cache_.capacity() == 0) continue;
    Request local;
    if (!queue_.request_of(r.names[0], &local)) {
      // Every rank submitted it, so this cannot happen while the engine runs; caching it anyway
      // (with metadata no request matches) keeps the caches identical on every rank.
      local.name = r.names[0];
      local.dtype = -1;
    }
    if (cache_.put(r, local)) continue;
    ++stats_.cache_evictions;
    if (!warned_eviction_ && topology_.rank == 0) {
      warned_eviction_ = true;
      HVDC_LOG_WARNING(
          "the response cache is full (HVDC_CACHE_CAPACITY=%zu entries) and evicts tensors; "
          "raise it above the number of distinct tensors per step, or set 0 to disable it",
          cache_.capacity());
    }
  }
}

// Cached tensors still waiting may have lost their slot this round (evicted or found stale):
// those go to the coordinator instead.
void Engine::revalidate_pending_hits() {
  // Slots move only when entries come or go; most rounds change none.
  if (cache_.generation() == revalidated_generation_) return;
  revalidated_generation_ = cache_.generation();
  std::vector<Request> demoted;
  for (auto it = pending_hits_.begin(); it != pending_hits_.end();) {
    Request request;
    if (!queue_.request_of(it->first, &request)) {
      it = pending_hits_.erase(it);  // no longer in flight (cannot happen while running)
      continue;
    }
    uint32_t slot = 0;
    const ResponseCache::Lookup found = cache_.lookup(request, &slot);
    if (found == ResponseCache::Lookup::kHit) {
      if (it->second.slot != slot) round_wanted_ = true;  // announce the new slot
      it->second.slot = slot;
      ++it;
      continue;
    }
    if (found == ResponseCache::Lookup::kInvalid) set_bit(invalid_bits_, slot);
    demoted.push_back(std::move(request));
    it = pending_hits_.erase(it);
  }
  if (!demoted.empty()) round_wanted_ = true;
  send_uncached(std::move(demoted));
}

}  // namespace hvdc::core

namespace hvdc::core {

// Only allreduces run while a rank has joined: other cached ops go to the coordinator, which
// fails them on every rank.
void Engine::demote_unjoinable_hits() {
  for (const auto& [name, hit] : pending_hits_) {
    if (cache_.response(hit.slot).op_type == OpType::kAllreduce) continue;
    set_bit(invalid_bits_, hit.slot);
    round_wanted_ = true;
  }
}

// A cached tensor that waits longer than the stall check time is missing on some rank; only the
// coordinator can say which. Marking its slot stale makes every rank send it there.
bool Engine::expose_stalled_hits() {
  if (config_.stall_check_seconds <= 0 || pending_hits_.empty()) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_stall_check_) return false;
  next_stall_check_ = now + std::chrono::milliseconds(100);
  const auto limit = std::chrono::seconds(config_.stall_check_seconds);
  bool any = false;
  for (const auto& [name, hit] : pending_hits_) {
    if (now - hit.since < limit) continue;
    set_bit(invalid_bits_, hit.slot);
    any = true;
  }
  round_wanted_ |= any;
  return any;
}

}  // namespace hvdc::core
