// The lane (lane.h): posting, deciding and settling a rank's op on its set's board.
#include "core/lane/lane.h"

#include <algorithm>
#include <cstring>

#include "common/dtype.h"
#include "transport/tag.h"

namespace hvdc::core {

void lane_signature(uint32_t slot, uint64_t set_ops, std::string* out) {
  out->resize(sizeof set_ops + sizeof slot);  // within the storage of the last signature
  std::memcpy(&(*out)[0], &set_ops, sizeof set_ops);
  std::memcpy(&(*out)[sizeof set_ops], &slot, sizeof slot);
}

bool Lane::eligible(const SetState& set, const Request& r) const {
  if (!ctx_.enabled || reporting_ || holds_ || set.size() < 2 ||
      set.size() > ops::kLaneMaxMembers) {
    return false;
  }
  // Any size: the op then runs in place among the members (Response::lane), which meet on
  // their board for it anyway.
  return r.op_type == OpType::kAllreduce && r.device_type == HVD_DEVICE_CPU;
}

ops::LaneBoard* Lane::board_of(const SetState& set) {
  auto it = boards_.find(set.info.id);
  if (it != boards_.end()) return it->second;
  ops::LaneBoard* board = ctx_.stage->lane_board(set);
  if (board == nullptr) return nullptr;  // not ready yet: asked again next time
  boards_[set.info.id] = board;
  auto known = std::find_if(known_boards_.begin(), known_boards_.end(),
                            [board](const KnownBoard& b) { return b.board == board; });
  if (known == known_boards_.end()) known_boards_.push_back({board, set.info.ranks});
  return board;
}

// The op's buffers (ops/lane.h), so that the board can tell whether its description there
// already is this op's.
ops::LaneBuffer Lane::lane_buffer(const Request& r, const OpBuffers& buffers) {
  ops::LaneBuffer buffer;
  buffer.dtype = r.dtype;
  buffer.reduce_op = r.reduce_op;
  if (buffers.input == nullptr || buffers.output == nullptr) return buffer;
  buffer.data = buffers.input;
  buffer.out = buffers.output;
  buffer.bytes = element_count(r.shape) * common::dtype_size(r.dtype);
  return buffer;
}

bool Lane::offer(SetState& set, const Request& request, uint32_t slot, const OpBuffers& buffers,
                 const std::deque<Response>& agreed, std::chrono::steady_clock::time_point now) {
  if (!eligible(set, request)) return false;
  ops::LaneBoard* board = board_of(set);
  if (board == nullptr) return false;
  // Only this op in flight here: nothing queued to run, running, or waiting for agreement.
  if (!agreed.empty() || !ctx_.stage->idle() || ctx_.queue->in_flight() != 1 || ctx_.joined() ||
      ctx_.round_open()) {
    return false;
  }
  lane_signature(slot, set.op_seq, &signature_);
  const uint64_t k = board->lane_next();
  if (!board->lane_post(k, signature_, lane_buffer(request, buffers))) return false;
  holds_ = true;
  posted_.board = board;
  posted_.ranks = set.info.ranks;  // into the storage of the last op's
  posted_.k = k;
  posted_.since = now;
  posted_.response = ctx_.spare_response();
  posted_.response = set.cache.response(slot);
  ctx_.tracer->lane_posted(posted_.response, ctx_.rank);
  return true;
}

// Runs or voids the posted op on its verdict; false while it is undecided.
bool Lane::act_on(ops::LaneVerdict verdict, std::deque<Response>* agreed) {
  if (verdict == ops::LaneVerdict::kUndecided) return false;
  wake_sleepers(posted_.board, posted_.ranks);
  stay_awake();
  holds_ = false;
  const bool run = verdict == ops::LaneVerdict::kRun;
  ctx_.tracer->lane_decided(posted_.response, run, posted_.ranks, ctx_.rank);
  if (run) {
    ++ctx_.stats->cache_hits;
    ++ctx_.stats->lane_collectives;
    posted_.response.lane = true;
    agreed->push_front(std::move(posted_.response));
    return true;
  }
  ++ctx_.stats->lane_voids;
  // Its request, from the queue, where it waits until it runs (none left: the queue closed, or
  // the set went, and either failed the op).
  Request request;
  const Response& posted = posted_.response;
  if (posted.names.empty() ||
      !ctx_.queue->request_of(posted.process_set, posted.names.front(), &request)) {
    return true;
  }
  reporting_ = true;  // so that the negotiation does not offer it back
  ctx_.report(std::move(request));
  reporting_ = false;
  return true;
}

// A peer posted an agreement this rank will not post for, as it has other ops in flight (or the
// same op, sent to the negotiation): void it, so that the peer's op goes to the negotiation too
// instead of waiting for this rank's post until the peer gives up (Lane::kHoldLimit). Only once
// this rank's ops in flight all wait for agreement: not while a round is under way here (the peer
// settles its post itself when it sees the round) nor while agreed ops wait to run or run here
// (they need nothing more of the peer, which posts only with none of its own left, and this
// rank may post the same op next). Voiding then sent the peer's next op into a round of its own,
// and with small inputs riding the rounds (no meeting after them to bring the ranks together)
// every op after it too: at np 3, 395 rounds for 500 ops of 4 KiB.
void Lane::answer_peers(const std::deque<Response>& agreed) {
  if (holds_ || ctx_.round_under_way() || !agreed.empty() || !ctx_.stage->idle()) return;
  for (const KnownBoard& known : known_boards_) {
    const uint64_t k = known.board->lane_next();
    // A peer's post first: most passes find none, and need not ask the queue (an atomic count).
    if (!known.board->lane_peer_posted(k) || ctx_.queue->in_flight() == 0) continue;
    known.board->lane_withdraw(k);
    ++ctx_.stats->lane_voids;
    wake_sleepers(known.board, known.ranks);
  }
}

void Lane::wake_sleepers(ops::LaneBoard* board, const std::vector<int>& ranks) {
  const uint64_t asleep = board->lane_sleepers();
  if (asleep == 0 || ctx_.transport == nullptr) return;
  for (size_t m = 0; m < ranks.size() && m < 64; ++m) {
    if ((asleep >> m & 1) == 0) continue;
    // A failed send means that peer is gone, which its connection's failure reports.
    (void)ctx_.transport->send_message(
        ranks[m], transport::make_tag(transport::TagKind::kLaneWake, ctx_.rank, 0), std::string());
  }
}

void Lane::stay_awake() {
  if (asleep_on_ == nullptr) return;
  asleep_on_->lane_sleep(false);
  asleep_on_ = nullptr;
}

bool Lane::before_sleep(std::deque<Response>* agreed, std::chrono::steady_clock::time_point now) {
  if (!holds_) return false;
  if (now - posted_.since > kHoldLimit) return settle(agreed);
  if (asleep_on_ == nullptr) {
    asleep_on_ = posted_.board;
    asleep_on_->lane_sleep(true);
  }
  // Decided between the last pass and the flag: nobody would wake this rank for it.
  return act_on(posted_.board->lane_decide(posted_.k), agreed);
}

void Lane::after_sleep() {
  stay_awake();
}

bool Lane::take_wakes() {
  if (ctx_.transport == nullptr) return false;
  bool any = false;
  transport::Tag tag;
  while (ctx_.transport->poll_message(transport::make_tag(transport::TagKind::kLaneWake, 0, 0),
                                      transport::kTagKindMask, &tag, &wake_bytes_)) {
    any = true;
  }
  return any;
}

bool Lane::progress(std::deque<Response>* agreed) {
  if (holds_) return act_on(posted_.board->lane_decide(posted_.k), agreed);
  answer_peers(*agreed);
  return false;
}

bool Lane::settle(std::deque<Response>* agreed) {
  if (!holds_) return false;
  return act_on(posted_.board->lane_withdraw(posted_.k), agreed);
}

void Lane::abandon() {
  if (!holds_) return;
  posted_.board->lane_withdraw(posted_.k);
  ctx_.tracer->lane_decided(posted_.response, false, posted_.ranks, ctx_.rank);
  wake_sleepers(posted_.board, posted_.ranks);
  stay_awake();
  holds_ = false;
}

}  // namespace hvdc::core
