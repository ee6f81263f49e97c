// Rounds of agreement at scale (HVDC_ROUND_TREE_MIN_RANKS ranks and more): the same round
// messages as the all-to-all (rounds.cc), carried up and down a tree of the ranks by
// TreeRounds. Every rank ends a round with every rank's message, as with the all-to-all, and
// derives the same order from them (complete_round), so nothing about the agreement changes
// but its cost: O(n) messages per round instead of n (n - 1).
#include "common/log.h"
#include "core/negotiation/negotiation.h"

namespace hvdc::core {

bool Negotiation::progress_tree_rounds(std::deque<Response>* agreed, Clock::time_point now) {
  bool busy = false;
  Status st = tree_->poll(round_ + 1, &busy);
  if (!st.is_ok()) {
    ctx_.fail(st);
    return true;
  }
  // A round's end may open the next one at once (the root knew that some rank wants it).
  while (running()) {
    const uint64_t next = round_ + 1;
    if (!in_round_ && !join_tree_round(next, &busy)) break;
    if (!running()) return true;
    std::vector<TreeEntry> all;
    const bool open_next = round_wanted_ || tree_->peer_wants(next + 1);
    st = tree_->advance(next, open_next, &all, &busy);
    if (st.is_ok() && !all.empty()) st = take_tree_round(next, std::move(all));
    if (!st.is_ok()) {
      ctx_.fail(st.with_context(common::strfmt("rank %d: negotiation round %llu", config_.rank,
                                               static_cast<unsigned long long>(next))));
      return true;
    }
    if (inbox_.count(next) == 0) break;  // the round goes on
    complete_round(agreed);
    tree_probed_ = false;
    busy = true;
  }
  if (running() && (in_round_ || tree_->asked(round_ + 1))) check_tree_round_time(now);
  return busy;
}

// Joins round `next` if it is open (the root opens it when it or a peer wants it); otherwise a
// rank with something to announce asks the root for it. True if this rank is in the round.
bool Negotiation::join_tree_round(uint64_t next, bool* busy) {
  const bool root = tree_->tree().is_root();
  const auto now = std::chrono::steady_clock::now();
  if (!tree_->is_open(next) && !(root && (round_wanted_ || tree_->peer_wants(next)))) {
    if (round_wanted_ && !root && !tree_->asked(next)) {
      *busy = true;
      round_started_ = now;
      tree_probed_ = false;
      Status st = tree_->ask(next);
      if (!st.is_ok()) ctx_.fail(st);
    }
    return false;
  }
  // A rank that asked waits since it asked: a root that never opens is a stopped root.
  if (!tree_->asked(next)) {
    round_started_ = now;
    tree_probed_ = false;
  }
  std::unique_ptr<RoundMessage> mine = build_round_message();
  *busy = true;
  Status st = tree_->join(next, encode(*mine));
  if (!st.is_ok()) ctx_.fail(st);
  return true;
}

// Every rank's message of a completed round, decoded into the inbox as the all-to-all leaves it.
Status Negotiation::take_tree_round(uint64_t next, std::vector<TreeEntry> all) {
  std::vector<std::unique_ptr<RoundMessage>> messages(all.size());
  for (TreeEntry& e : all) {
    auto msg = std::make_unique<RoundMessage>();
    auto bytes = std::make_shared<const std::string>(std::move(e.bytes));
    HVDC_RETURN_IF_ERROR(decode_round_message(std::move(bytes), msg.get())
                             .with_context(common::strfmt("rank %d's round message", e.rank)));
    if (msg->round != next) {
      return common::make_error(HVD_ERR_INTERNAL, "rank %d's round message is for round %llu",
                                e.rank, static_cast<unsigned long long>(msg->round));
    }
    messages[static_cast<size_t>(e.rank)] = std::move(msg);
  }
  inbox_[next] = std::move(messages);
  return Status::ok();
}

// A round that waits HVDC_TIMEOUT probes every rank whose message this rank lacks; a live
// engine thread answers at once, even while it waits itself for a rank further down the tree.
// Those that did not answer by 1.5 x HVDC_TIMEOUT stopped, hang or are unreachable: they are
// named, and the failure goes to every peer. (A rank that runs a collective with a stopped
// peer answers nothing either, but its own transfer times out after HVDC_TIMEOUT and names
// the stopped peer first, as with the all-to-all.) If every probed rank answered, the round
// is slow, not stuck on a stopped rank: probe again.
void Negotiation::check_tree_round_time(Clock::time_point now) {
  if (config_.timeout_seconds <= 0) return;
  const auto timeout = std::chrono::milliseconds(config_.timeout_seconds * 1000);
  const auto waited = now - round_started_;
  if (waited < timeout) return;
  if (!tree_probed_) {
    tree_->probe(round_ + 1, tree_->missing());
    tree_probed_ = true;
    return;
  }
  if (waited < timeout * 3 / 2) return;
  const std::vector<int> silent = tree_->unanswered();
  if (silent.empty()) {
    round_started_ = now - timeout;
    tree_probed_ = false;
    return;
  }
  std::string names;
  for (int r : silent) names += (names.empty() ? "" : ", ") + std::to_string(r);
  ctx_.fail(common::make_error(HVD_ERR_TIMEOUT,
                               "rank %d: negotiation round %llu waited %g s (1.5 x HVDC_TIMEOUT) "
                               "and rank(s) %s did not answer a liveness probe; they stopped, "
                               "hang or are unreachable",
                               config_.rank, static_cast<unsigned long long>(round_ + 1),
                               config_.timeout_seconds * 1.5, names.c_str()));
}

}  // namespace hvdc::core
