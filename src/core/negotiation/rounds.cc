// Rounds of agreement. A round is an exchange in which every rank sends every other rank one
// RoundMessage: per process set of the sender, the cache slots of tensors it has ready and the
// slots it found stale, and the responses it negotiated as a set's coordinator. Any rank with
// something new to announce starts the next round; a rank that hears of a round it has not
// joined joins it at once with what it has. Once a rank holds all messages of a round it
// computes, like every other rank, the same order: the coordinators' responses, then per set the
// cached tensors ready on every member (the AND of their hit bits) in slot order, and keeps the
// part of its own sets. Rounds complete in the same order everywhere, so any two ranks execute
// the collectives they share in the same order, and warm steps never wait for a coordinator.
#include <algorithm>

#include "common/log.h"
#include "core/fusion.h"
#include "core/negotiation/negotiation.h"

namespace hvdc::core {

using transport::make_tag;
using transport::TagKind;

Negotiation::Negotiation(const NegotiationConfig& config, NegotiationContext context)
    : config_(config), ctx_(std::move(context)) {
  if (ctx_.transport != nullptr && config_.size >= std::max(2, config_.round_tree_min_ranks)) {
    tree_ = std::make_unique<TreeRounds>(
        RoundTree(config_.rank, config_.size, config_.round_tree_fanout), ctx_.transport);
  }
}

Negotiation::~Negotiation() = default;

// A peer's round message, checked as far as the engine acts on it.
Status Negotiation::decode_round_message(std::shared_ptr<const std::string> bytes,
                                         RoundMessage* msg) const {
  HVDC_RETURN_IF_ERROR(decode(*bytes, msg));
  for (const Response& r : msg->responses.responses) HVDC_RETURN_IF_ERROR(check_response(r));
  for (RoundInput& input : msg->inputs) input.owner = bytes;
  return Status::ok();
}

bool Negotiation::round_open() {
  if (!in_round_ && !tree_) receive_round_messages();
  return round_under_way();
}

bool Negotiation::receive_round_messages() {
  bool busy = false;
  transport::Tag tag;
  for (;;) {
    const std::shared_ptr<std::string>& bytes = free_receive_buffer();
    if (!ctx_.transport ||
        !ctx_.transport->poll_message(make_tag(TagKind::kRound, 0, 0), transport::kTagKindMask,
                                      &tag, bytes.get())) {
      break;
    }
    busy = true;
    std::unique_ptr<RoundMessage> msg = fresh_message();
    const int from = transport::tag_source(tag);
    Status st = decode_round_message(bytes, msg.get());
    if (!st.is_ok() || msg->round <= round_) {
      // A lost or garbled round would leave the ranks disagreeing on what to run.
      ctx_.fail((st.is_ok() ? common::make_error(HVD_ERR_INTERNAL, "stale round %llu",
                                                 static_cast<unsigned long long>(msg->round))
                            : st)
                    .with_context(common::strfmt("round message from rank %d", from)));
      return true;
    }
    round_slots(msg->round)[from] = std::move(msg);
  }
  return busy;
}

bool Negotiation::progress_rounds(std::deque<Response>* agreed, Clock::time_point now) {
  if (tree_) return progress_tree_rounds(agreed, now);
  bool busy = receive_round_messages();
  if (!running()) return busy;
  const bool peer_started = inbox_.count(round_ + 1) != 0;
  if (!in_round_ && (round_wanted_ || peer_started)) {
    send_round_message();
    busy = true;
    if (!running()) return busy;
  }
  if (in_round_) {
    const auto& messages = inbox_[round_ + 1];
    if (messages.size() != static_cast<size_t>(config_.size)) return busy;  // cannot happen
    for (const auto& m : messages) {
      if (!m) return round_timed_out(messages, now) || busy;
    }
    complete_round(agreed);
    busy = true;
  }
  return busy;
}

// This rank's message for the next round: what it has to announce now.
std::unique_ptr<RoundMessage> Negotiation::build_round_message() {
  std::unique_ptr<RoundMessage> mine = fresh_message();
  mine->round = round_ + 1;
  mine->joined = 0;
  // Filled in place: a recycled message's bit vectors keep their storage.
  size_t announced = 0;
  for (auto& [id, set] : *ctx_.sets) {
    if (mine->sets.size() == announced) mine->sets.emplace_back();
    if (announce_cache_bits(*set, &mine->sets[announced])) ++announced;
  }
  mine->sets.resize(announced);
  mine->joined = self_joined_ ? 1 : 0;
  add_round_inputs(mine.get());
  for (auto& [id, set] : *ctx_.sets) {
    for (Response& r : set->coordinator_out) mine->responses.responses.push_back(std::move(r));
    set->coordinator_out.clear();
  }
  round_wanted_ = false;
  in_round_ = true;
  return mine;
}

void Negotiation::send_round_message() {
  std::unique_ptr<RoundMessage> mine = build_round_message();
  round_started_ = std::chrono::steady_clock::now();
  const uint64_t round = mine->round;
  if (ctx_.transport) round_out_ = encode(*mine, std::move(round_out_));
  // In the inbox before anything can fail: a round is complete only with a message per rank.
  round_slots(round)[config_.rank] = std::move(mine);
  for (int p = 0; ctx_.transport && p < config_.size; ++p) {
    if (p == config_.rank) continue;
    Status st =
        ctx_.transport->send_message(p, make_tag(TagKind::kRound, config_.rank, round), round_out_);
    if (!st.is_ok()) {
      ctx_.fail(st.with_context("sending a round message"));
      return;
    }
  }
}

// A tensor that waits at the coordinator for a rank that does not submit it may wait for a
// rank that is busy computing (legitimate; the stall inspector reports it) or for one whose
// process stopped. Only a round tells them apart: any live rank's engine thread answers one.
// So while ops wait here, an empty round goes out every HVDC_TIMEOUT / 2, and a rank that does
// not answer it within HVDC_TIMEOUT times out (round_timed_out).
void Negotiation::probe_liveness(std::chrono::steady_clock::time_point now,
                                 std::chrono::steady_clock::duration oldest_age) {
  if (config_.timeout_seconds <= 0 || in_round_ || round_wanted_ || !ctx_.transport) return;
  const auto half = std::chrono::milliseconds(config_.timeout_seconds * 500);
  if (now - last_round_done_ < half || oldest_age < half) return;
  round_wanted_ = true;
}

// A rank whose round message does not come within 1.5 x HVDC_TIMEOUT has stopped, hangs or
// cannot be reached (a dead peer's connection error ends the engine's work sooner). The extra
// half: a rank running a collective with a stopped peer answers no round, but its own transfer
// times out after HVDC_TIMEOUT and its notice names the stopped peer, not itself.
bool Negotiation::round_timed_out(const std::vector<std::unique_ptr<RoundMessage>>& messages,
                                  Clock::time_point now) {
  if (config_.timeout_seconds <= 0) return false;
  const auto waited = now - round_started_;
  if (waited < std::chrono::milliseconds(config_.timeout_seconds * 1500)) return false;
  std::string missing;
  for (size_t r = 0; r < messages.size(); ++r) {
    if (!messages[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  ctx_.fail(common::make_error(HVD_ERR_TIMEOUT,
                               "rank %d: negotiation round %llu got no message from rank(s) %s "
                               "for %g s (1.5 x HVDC_TIMEOUT); they stopped, hang or are "
                               "unreachable",
                               config_.rank, static_cast<unsigned long long>(round_ + 1),
                               missing.c_str(), config_.timeout_seconds * 1.5));
  return true;
}

// The set's cache slots ready here and found stale here; empty vectors when there are none.
bool Negotiation::announce_cache_bits(SetState& set, CacheBits* bits) {
  bits->process_set = set.info.id;
  bits->hits.clear();
  bits->invalid.clear();
  const bool joined_here = self_joined_ && set.info.id == 0;
  if (!set.pending_hits.empty() || joined_here) {
    bits->hits.assign(set.cache.words_in_use(), 0);
    for (const auto& [name, hit] : set.pending_hits) set_bit(bits->hits, hit.slot);
  }
  if (joined_here) {
    // Having joined, this rank agrees to every cached allreduce: it will contribute zeros.
    for (uint32_t slot = 0; slot < set.cache.capacity(); ++slot) {
      if (set.cache.used(slot) && set.cache.response(slot).op_type == OpType::kAllreduce) {
        set_bit(bits->hits, slot);
      }
    }
  }
  bool stale = false;
  for (size_t w = 0; w < set.cache.words_in_use(); ++w) stale |= set.invalid_bits[w] != 0;
  if (stale) {
    bits->invalid.swap(set.invalid_bits);
    set.invalid_bits.assign(set.cache.words(), 0);
  }
  return !bits->hits.empty() || !bits->invalid.empty();
}

// Every rank derives the same order: the coordinators' responses in rank order, then per set
// (ascending id) its cached tensors ready on every member. A rank keeps the part of its sets,
// so any two ranks run the collectives they share in the same relative order.
void Negotiation::complete_round(std::deque<Response>* agreed) {
  auto node = inbox_.extract(round_ + 1);
  std::vector<std::unique_ptr<RoundMessage>>& messages = node.mapped();
  // Both vectors are kept between rounds for their storage (a warm round allocates neither).
  std::vector<Response> list = std::move(round_list_);
  list.clear();
  for (auto& m : messages) {
    for (Response& r : m->responses.responses) {
      if (member_set(r.process_set) != nullptr) list.push_back(std::move(r));
    }
  }
  std::vector<Response>& cached = round_cached_;
  cached.clear();
  for (auto& [id, set] : *ctx_.sets) agree_cached(*set, messages, list, &cached);
  for (Response& r : cached) list.push_back(std::move(r));
  cached.clear();
  ++round_;
  in_round_ = false;
  last_round_done_ = std::chrono::steady_clock::now();
  ++ctx_.stats->rounds;
  for (auto& [id, set] : *ctx_.sets) revalidate_pending_hits(*set);
  ctx_.tracer->queued(list);
  std::vector<Response> fused = fuse_responses(std::move(list), config_.fusion_threshold);
  for (Response& r : fused) agreed->push_back(std::move(r));
  fused.clear();
  round_list_ = std::move(fused);
  recycle(std::move(node));
}

namespace {

const CacheBits* bits_of(const RoundMessage& m, int32_t id) {
  for (const CacheBits& bits : m.sets) {
    if (bits.process_set == id) return &bits;
  }
  return nullptr;
}

uint64_t word_at(const std::vector<uint64_t>& words, size_t w) {
  return w < words.size() ? words[w] : 0;
}

}  // namespace

// One set's share of a completed round: the AND of its members' hit bits (a joined rank reports
// every cached allreduce as ready, so a tensor runs only when some rank that has not joined
// submitted it), the stale entries, and the cache updates. Appends the cached tensors to run to
// *cached.
void Negotiation::agree_cached(SetState& set,
                               const std::vector<std::unique_ptr<RoundMessage>>& messages,
                               const std::vector<Response>& negotiated,
                               std::vector<Response>* cached) {
  const size_t words = set.cache.words_in_use();
  // Kept between rounds: a warm step's round allocates no bit vectors.
  std::vector<uint64_t>& hits = agree_bits_.hits;
  std::vector<uint64_t>& wanted = agree_bits_.wanted;
  std::vector<uint64_t>& invalid = agree_bits_.invalid;
  hits.assign(words, ~uint64_t{0});
  wanted.assign(words, 0);
  invalid.assign(words, 0);
  bool peer_joined = false;
  for (int member : set.info.ranks) {
    const RoundMessage& m = *messages[member];
    const CacheBits* bits = bits_of(m, set.info.id);
    const bool joined = set.info.id == 0 && m.joined != 0;
    peer_joined |= joined;
    for (size_t w = 0; w < words; ++w) {
      const uint64_t ready = bits ? word_at(bits->hits, w) : 0;
      hits[w] &= ready;
      if (!joined) wanted[w] |= ready;
      invalid[w] |= bits ? word_at(bits->invalid, w) : 0;
    }
  }
  for (size_t w = 0; w < words; ++w) hits[w] &= wanted[w];
  if (set.info.id == 0) ctx_.tracer->cached_negotiation(set.cache, messages, hits);
  if (peer_joined) demote_unjoinable_hits(set);
  take_cache_hits(set, hits, messages, cached);
  for_each_set_bit(invalid, [&](uint32_t slot) { set.cache.erase(slot); });
  cache_responses(set, negotiated);
}

void Negotiation::take_cache_hits(SetState& set, const std::vector<uint64_t>& hits,
                                  const std::vector<std::unique_ptr<RoundMessage>>& messages,
                                  std::vector<Response>* out) {
  const size_t before = out->size();
  for_each_set_bit(hits, [&](uint32_t slot) {
    out->push_back(spare_response());
    Response& hit = out->back();
    hit = set.cache.response(slot);  // into the spare's storage
    attach_round_inputs(set, slot, messages, &hit);
    set.cache.touch(slot);
    set.drop_pending_hit(hit.names[0]);
  });
  ctx_.stats->cache_hits += out->size() - before;
}

// Caches the set's newly negotiated responses (`responses` holds every set's).
void Negotiation::cache_responses(SetState& set, const std::vector<Response>& responses) {
  if (set.cache.capacity() == 0) return;
  for (const Response& r : responses) {
    if (r.process_set != set.info.id || !ResponseCache::cacheable(r)) continue;
    Request local;
    if (!ctx_.queue->request_of(set.info.id, r.names[0], &local)) {
      // Every member submitted it, so this cannot happen while the engine runs; caching it
      // anyway (with metadata no request matches) keeps the caches identical on every member.
      local.name = r.names[0];
      local.process_set = set.info.id;
      local.dtype = -1;
    }
    if (set.cache.put(r, local)) continue;
    ++ctx_.stats->cache_evictions;
    if (!warned_eviction_ && set.coordinator()) {
      warned_eviction_ = true;
      HVDC_LOG_WARNING(
          "the response cache is full (HVDC_CACHE_CAPACITY=%zu entries) and evicts tensors; "
          "raise it above the number of distinct tensors per step, or set 0 to disable it",
          set.cache.capacity());
    }
  }
}

// Cached tensors still waiting may have lost their slot this round (evicted or found stale):
// those go to the coordinator instead.
void Negotiation::revalidate_pending_hits(SetState& set) {
  // Slots move only when entries come or go; most rounds change none.
  if (set.cache.generation() == set.revalidated_generation) return;
  set.revalidated_generation = set.cache.generation();
  std::vector<Request> demoted;
  for (auto it = set.pending_hits.begin(); it != set.pending_hits.end();) {
    Request request;
    if (!ctx_.queue->request_of(set.info.id, it->first, &request)) {
      it = set.pending_hits.erase(it);  // no longer in flight (cannot happen while running)
      continue;
    }
    uint32_t slot = 0;
    const ResponseCache::Lookup found = set.cache.lookup(request, &slot);
    if (found == ResponseCache::Lookup::kHit) {
      if (it->second.slot != slot) round_wanted_ = true;  // announce the new slot
      it->second.slot = slot;
      ++it;
      continue;
    }
    if (found == ResponseCache::Lookup::kInvalid) set_bit(set.invalid_bits, slot);
    demoted.push_back(std::move(request));
    it = set.pending_hits.erase(it);
  }
  if (!demoted.empty()) round_wanted_ = true;
  send_uncached(set, std::move(demoted));
}

}  // namespace hvdc::core

namespace hvdc::core {

// Only allreduces run while a rank has joined: other cached ops go to the coordinator, which
// fails them on every rank.
void Negotiation::demote_unjoinable_hits(SetState& set) {
  for (const auto& [name, hit] : set.pending_hits) {
    if (set.cache.response(hit.slot).op_type == OpType::kAllreduce) continue;
    set_bit(set.invalid_bits, hit.slot);
    round_wanted_ = true;
  }
}

// A cached tensor that waits longer than the stall check time is missing on some rank; only the
// coordinator can say which. Marking its slot stale makes every member send it there.
bool Negotiation::expose_stalled_hits(Clock::time_point now) {
  if (config_.stall_check_seconds <= 0) return false;
  if (now < next_stall_check_) return false;
  next_stall_check_ = now + std::chrono::milliseconds(100);
  const auto limit = std::chrono::seconds(config_.stall_check_seconds);
  bool any = false;
  for (auto& [id, set] : *ctx_.sets) {
    for (const auto& [name, hit] : set->pending_hits) {
      if (now - hit.since < limit) continue;
      set_bit(set->invalid_bits, hit.slot);
      any = true;
    }
  }
  round_wanted_ |= any;
  return any;
}

}  // namespace hvdc::core
