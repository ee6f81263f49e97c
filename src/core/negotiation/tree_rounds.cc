#include "core/negotiation/tree_rounds.h"

#include <algorithm>

#include "common/log.h"

namespace hvdc::core {

using common::make_error;
using transport::make_tag;
using transport::TagKind;

namespace {

Status protocol_error(const char* what, unsigned long long round) {
  return make_error(HVD_ERR_INTERNAL, "%s (round %llu)", what, round);
}

}  // namespace

Status TreeRounds::poll(uint64_t next, bool* busy) {
  transport::Tag tag;
  std::string bytes;
  while (transport_->poll_message(make_tag(TagKind::kTreeRound, 0, 0), transport::kTagKindMask,
                                  &tag, &bytes)) {
    *busy = true;
    const int from = transport::tag_source(tag);
    TreeMessage msg;
    Status st = decode(bytes, &msg);
    if (st.is_ok()) st = handle(from, std::move(msg), bytes, next);
    if (!st.is_ok()) {
      return st.with_context(
          common::strfmt("rank %d: tree round message from rank %d", tree_.rank(), from));
    }
  }
  return Status::ok();
}

Status TreeRounds::handle(int from, TreeMessage msg, const std::string& bytes, uint64_t next) {
  const auto round = static_cast<unsigned long long>(msg.round);
  switch (msg.kind) {
    case TreeKind::kWant:
      // A rank asks for the round after the last it completed, never past the root's next.
      if (!tree_.is_root() || msg.round == 0 || msg.round > next) {
        return protocol_error("unexpected round request", round);
      }
      wanted_ = std::max(wanted_, msg.round);
      return Status::ok();
    case TreeKind::kOpen:
      if (from != tree_.parent() || msg.round < next || msg.round > next + 1) {
        return protocol_error("unexpected round opening", round);
      }
      opened_ = std::max(opened_, msg.round);
      return Status::ok();
    case TreeKind::kUp:
      return take_up(from, std::move(msg), next);
    case TreeKind::kDown:
      if (from != tree_.parent() || msg.round != next || !up_sent_ || have_down_) {
        return protocol_error("unexpected round result", round);
      }
      have_down_ = true;
      down_ = std::move(msg);
      down_bytes_ = bytes;
      return Status::ok();
    case TreeKind::kProbe:
      // Best effort: a peer whose connection failed is found by the transport.
      (void)send(from, TreeMessage{TreeKind::kProbeAnswer, msg.round, 0, {}});
      return Status::ok();
    case TreeKind::kProbeAnswer:
      answered_.insert(from);
      return Status::ok();
  }
  return protocol_error("unknown kind", round);
}

// A child's messages: exactly one per rank of its subtree, for the round in progress.
Status TreeRounds::take_up(int from, TreeMessage msg, uint64_t next) {
  const auto round = static_cast<unsigned long long>(msg.round);
  const auto& children = tree_.children();
  const auto it = std::find(children.begin(), children.end(), from);
  if (it == children.end() || msg.round != next || joined_ != next) {
    return protocol_error("unexpected subtree messages", round);
  }
  const size_t index = static_cast<size_t>(it - children.begin());
  std::vector<int> ranks;
  for (const TreeEntry& e : msg.entries) ranks.push_back(e.rank);
  std::sort(ranks.begin(), ranks.end());
  if (ups_.count(index) != 0 || ranks != tree_.subtree_of_child(index)) {
    return protocol_error("subtree messages that do not match the child's subtree", round);
  }
  ups_[index] = std::move(msg.entries);
  return Status::ok();
}

Status TreeRounds::send(int peer, const TreeMessage& msg) {
  return send_bytes(peer, encode(msg));
}

Status TreeRounds::send_bytes(int peer, const std::string& bytes) {
  return transport_->send_message(peer, make_tag(TagKind::kTreeRound, tree_.rank(), 0), bytes);
}

Status TreeRounds::ask(uint64_t next) {
  asked_ = std::max(asked_, next);
  return send(0, TreeMessage{TreeKind::kWant, next, 0, {}})
      .with_context("asking rank 0 for a negotiation round");
}

Status TreeRounds::join(uint64_t next, std::string own) {
  joined_ = next;
  own_ = std::move(own);
  if (tree_.is_root()) opened_ = std::max(opened_, next);
  return tell_children(next);
}

Status TreeRounds::tell_children(uint64_t round) {
  if (children_told_ >= round) return Status::ok();
  children_told_ = round;
  const std::string bytes = encode(TreeMessage{TreeKind::kOpen, round, 0, {}});
  for (int child : tree_.children()) {
    HVDC_RETURN_IF_ERROR(send_bytes(child, bytes).with_context("opening a negotiation round"));
  }
  return Status::ok();
}

Status TreeRounds::advance(uint64_t next, bool open_next, std::vector<TreeEntry>* all, bool* busy) {
  all->clear();
  if (joined_ != next) return Status::ok();
  if (!up_sent_) {
    if (ups_.size() < tree_.children().size()) return Status::ok();
    *busy = true;
    if (tree_.is_root()) return send_down(next, open_next, all);
    HVDC_RETURN_IF_ERROR(send_up(next));
  }
  if (!have_down_) return Status::ok();
  *busy = true;
  return finish_down(next, all);
}

Status TreeRounds::send_up(uint64_t next) {
  TreeMessage up{TreeKind::kUp, next, 0, {}};
  up.entries.push_back(TreeEntry{tree_.rank(), std::move(own_)});
  for (auto& [index, entries] : ups_) {
    for (TreeEntry& e : entries) up.entries.push_back(std::move(e));
  }
  ups_.clear();
  up_sent_ = true;
  return send(tree_.parent(), up).with_context("sending a negotiation round up the tree");
}

// The root holds every rank's message: down to every child, in rank order.
Status TreeRounds::send_down(uint64_t next, bool open_next, std::vector<TreeEntry>* all) {
  TreeMessage down{TreeKind::kDown, next, open_next ? 1 : 0, {}};
  down.entries.resize(static_cast<size_t>(tree_.size()));
  down.entries[0] = TreeEntry{0, std::move(own_)};
  for (auto& [index, entries] : ups_) {
    for (TreeEntry& e : entries) {
      const size_t at = static_cast<size_t>(e.rank);
      down.entries[at] = std::move(e);
    }
  }
  const std::string bytes = encode(down);
  if (open_next) {
    opened_ = std::max(opened_, next + 1);
    children_told_ = std::max(children_told_, next + 1);
  }
  *all = std::move(down.entries);
  reset_round();
  for (int child : tree_.children()) {
    HVDC_RETURN_IF_ERROR(
        send_bytes(child, bytes).with_context("sending a negotiation round down the tree"));
  }
  return Status::ok();
}

// The parent's kDown: on to the children as it came, then every rank's message, in rank order.
Status TreeRounds::finish_down(uint64_t next, std::vector<TreeEntry>* all) {
  const size_t n = static_cast<size_t>(tree_.size());
  bool complete = down_.entries.size() == n;
  for (size_t r = 0; complete && r < n; ++r)
    complete = down_.entries[r].rank == static_cast<int>(r);
  if (!complete) {
    return protocol_error("a round result without one message per rank",
                          static_cast<unsigned long long>(next));
  }
  for (int child : tree_.children()) {
    HVDC_RETURN_IF_ERROR(
        send_bytes(child, down_bytes_).with_context("sending a negotiation round down the tree"));
  }
  if (down_.open_next != 0) {
    opened_ = std::max(opened_, next + 1);
    children_told_ = std::max(children_told_, next + 1);
  }
  *all = std::move(down_.entries);
  reset_round();
  return Status::ok();
}

void TreeRounds::reset_round() {
  own_.clear();
  up_sent_ = false;
  ups_.clear();
  have_down_ = false;
  down_ = TreeMessage();
  down_bytes_.clear();
  probed_.clear();
  answered_.clear();
}

std::vector<int> TreeRounds::missing() const {
  std::vector<bool> held(static_cast<size_t>(tree_.size()), false);
  held[static_cast<size_t>(tree_.rank())] = true;
  if (up_sent_) {
    for (int r : tree_.subtree(tree_.rank())) held[static_cast<size_t>(r)] = true;
  }
  for (const auto& [index, entries] : ups_) {
    for (int r : tree_.subtree_of_child(index)) held[static_cast<size_t>(r)] = true;
  }
  std::vector<int> out;
  for (size_t r = 0; r < held.size(); ++r) {
    if (!held[r]) out.push_back(static_cast<int>(r));
  }
  return out;
}

void TreeRounds::probe(uint64_t next, const std::vector<int>& ranks) {
  probed_.clear();
  answered_.clear();
  const std::string bytes = encode(TreeMessage{TreeKind::kProbe, next, 0, {}});
  for (int r : ranks) {
    probed_.insert(r);
    (void)send_bytes(r, bytes);  // best effort: a failed connection is found by the transport
  }
}

std::vector<int> TreeRounds::unanswered() const {
  std::vector<int> out;
  for (int r : probed_) {
    if (answered_.count(r) == 0) out.push_back(r);
  }
  return out;
}

}  // namespace hvdc::core
