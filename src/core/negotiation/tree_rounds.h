// Rounds of agreement at scale: the messages of one rank in a round that goes up and down a
// tree of the ranks (round_tree.h) instead of from every rank to every rank. A rank that wants
// a round asks the root (kWant; the root takes the first ask per round); the root opens the
// round down the tree (kOpen); each rank sends its own round message and its subtree's up to
// its parent once all its children's are in (kUp); the root, holding all n, sends them down
// (kDown), which may open the next round too. 3 to 4 (n - 1) messages and 3 log_k(n) + 1 hops
// per round, against n (n - 1) messages for the all-to-all. The content of the round messages
// and what every rank derives from them stay with Negotiation (rounds.cc, rounds_by_tree.cc).
// A rank whose round waits too long probes the ranks it lacks directly (kProbe): a live engine
// thread answers at once, so the ranks that do not answer are the ones that stopped.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/negotiation/round_tree.h"
#include "transport/transport.h"

namespace hvdc::core {

class TreeRounds {
 public:
  TreeRounds(const RoundTree& tree, transport::Transport* transport)
      : tree_(tree), transport_(transport) {}

  const RoundTree& tree() const { return tree_; }
  // Takes every tree message that arrived; `next` is the round this rank would take part in
  // next (rounds completed + 1). Answers probes. An error: a message that breaks the protocol.
  Status poll(uint64_t next, bool* busy);
  // Whether round `next` is open: the parent said so, or the root opened it.
  bool is_open(uint64_t next) const { return opened_ >= next; }
  // At the root: whether a peer asked for round `next`.
  bool peer_wants(uint64_t next) const { return wanted_ >= next; }
  // Whether this rank asked the root for round `next` already.
  bool asked(uint64_t next) const { return asked_ >= next; }
  // Not at the root: asks the root to open round `next`.
  Status ask(uint64_t next);
  // Takes part in round `next` with this rank's encoded round message; at the root this opens
  // it. Children that do not know yet that it is open are told.
  Status join(uint64_t next, std::string own);
  // Moves the round on: up once every child's messages are in; at the root, down (with
  // open_next: the next round opens with it). *all gets every rank's message, by rank, once
  // the round is complete here (empty until then).
  Status advance(uint64_t next, bool open_next, std::vector<TreeEntry>* all, bool* busy);
  // The ranks whose round messages this rank does not hold for the round in progress.
  std::vector<int> missing() const;
  // Asks each of `ranks` whether its engine thread is alive (for round `next`).
  void probe(uint64_t next, const std::vector<int>& ranks);
  // Probed ranks that have not answered since the last probe(), ascending.
  std::vector<int> unanswered() const;

 private:
  Status handle(int from, TreeMessage msg, const std::string& bytes, uint64_t next);
  Status take_up(int from, TreeMessage msg, uint64_t next);
  Status take_down(TreeMessage msg, const std::string& bytes, uint64_t next);
  Status send(int peer, const TreeMessage& msg);
  Status send_bytes(int peer, const std::string& bytes);
  Status tell_children(uint64_t round);
  Status send_up(uint64_t next);
  Status send_down(uint64_t next, bool open_next, std::vector<TreeEntry>* all);
  Status finish_down(uint64_t next, std::vector<TreeEntry>* all);
  void reset_round();

  const RoundTree tree_;
  transport::Transport* transport_;
  uint64_t opened_ = 0;         // the highest round known to be open
  uint64_t asked_ = 0;          // the highest round this rank asked the root for
  uint64_t wanted_ = 0;         // root: the highest round a peer asked for
  uint64_t children_told_ = 0;  // the highest round the children know to be open
  uint64_t joined_ = 0;         // the round this rank's own message is in
  std::string own_;             // this rank's encoded message for round joined_
  bool up_sent_ = false;
  // The children's subtree messages for the round in progress, by child index.
  std::map<size_t, std::vector<TreeEntry>> ups_;
  // The parent's kDown for the round in progress, as it came (forwarded as is).
  bool have_down_ = false;
  TreeMessage down_;
  std::string down_bytes_;
  std::set<int> probed_, answered_;
};

}  // namespace hvdc::core
