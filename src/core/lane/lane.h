// The lane: a cached host allreduce of a set whose members share this host is agreed on the
// set's board (ops/lane.h) instead of in a negotiation round, when it is the only op this rank
// has in flight, as in a loop that waits for each op. It then runs like any agreed response, next,
// through the host backend (whose in-place path meets on the same board), without the round's
// messages or its wait. Everything else, and every op the lane voids, goes to the negotiation.
//
// Why the order of execution stays the same on every member: a rank posts an op only while
// nothing else is in flight, queued to run or running here; and before it runs any negotiated
// response, or when a round starts, it settles its posted op (voids it, unless it was decided to
// run: it then runs first). So every member runs a lane op before any response agreed after it,
// and none waits on another for it. A lane op never blocks a pass either: it is decided, or
// voided, and meanwhile the passes go on; an engine thread with nothing else to do sleeps with
// its post held, and whoever decides wakes it (before_sleep()).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/engine_stats.h"
#include "core/execution/stage.h"
#include "core/message.h"
#include "core/set_state.h"
#include "core/tensor_queue.h"
#include "core/tracing/tracer.h"
#include "ops/lane.h"
#include "transport/transport.h"

namespace hvdc::core {

// What the lane works with, owned by the engine (its passes only, one thread at a time).
struct LaneContext {
  transport::Transport* transport = nullptr;  // wakes a peer asleep with its post
  int rank = 0;
  TensorQueue* queue = nullptr;
  EngineStats* stats = nullptr;
  ExecutionStage* stage = nullptr;  // idle(), and the sets' boards
  Tracer* tracer = nullptr;         // the timeline's negotiation and op spans
  // Hands a voided op to the negotiation (Negotiation::report).
  std::function<void(Request)> report;
  // An executed response's storage, for the next (Negotiation::spare_response).
  std::function<Response()> spare_response;
  std::function<bool()> joined;      // this rank has joined (hvd_join): it takes no lane
  std::function<bool()> round_open;  // a round is under way: the op goes into it
  // The same as far as the last look at the transport knows (Negotiation::round_under_way).
  std::function<bool()> round_under_way;
  bool enabled = true;  // HVDC_LANE
};

class Lane {
 public:
  explicit Lane(LaneContext context) : ctx_(std::move(context)) {}

  // A cached request this rank just submitted (its cache slot in `set`): true if the lane took
  // it, false if it goes to the negotiation. `buffers`: its input and output (null: not known);
  // `agreed`: the responses waiting to run here; `now`: the time of the engine's pass, from
  // which the post's kHoldLimit counts.
  bool offer(SetState& set, const Request& request, uint32_t slot, const OpBuffers& buffers,
             const std::deque<Response>& agreed, std::chrono::steady_clock::time_point now);
  // Decides the op posted here (run: its response goes to the front of *agreed; void: to the
  // negotiation), and voids a peer's post that this rank cannot answer with one of its own
  // (it has other ops in flight). True if anything happened.
  bool progress(std::deque<Response>* agreed);
  // Before negotiated responses run, when a round starts, or after kHoldLimit: decides the op
  // posted here at once, as progress() does, voiding it unless it was decided to run.
  bool settle(std::deque<Response>* agreed);
  // The engine thread found nothing to do for its spin and would sleep with the op posted here:
  // it may, flagged on the board, unless the op was decided meanwhile (then acted on: true), or
  // it has waited kHoldLimit (then settled: true). The rank that decides wakes it.
  bool before_sleep(std::deque<Response>* agreed, std::chrono::steady_clock::time_point now);
  // The engine thread is awake again.
  void after_sleep();
  // Drops the wake-up messages that came (they only end a sleep); true if there were any.
  bool take_wakes();
  // The engine's work ended: the op posted here is voided where it can still be.
  void abandon();
  bool holds() const { return holds_; }

  // How long a post waits for the other members at most: then the op goes to the negotiation,
  // whose stall inspector and timeouts watch it.
  static constexpr std::chrono::milliseconds kHoldLimit{100};

 private:
  struct Posted {
    ops::LaneBoard* board = nullptr;
    std::vector<int> ranks;  // the set's, by member index
    uint64_t k = 0;          // its agreement
    std::chrono::steady_clock::time_point since;
    Response response;  // the cached response, as it was when posted
  };
  struct KnownBoard {
    ops::LaneBoard* board;
    std::vector<int> ranks;
  };
  bool eligible(const SetState& set, const Request& request) const;
  static ops::LaneBuffer lane_buffer(const Request& r, const OpBuffers& buffers);
  ops::LaneBoard* board_of(const SetState& set);
  bool act_on(ops::LaneVerdict verdict, std::deque<Response>* agreed);
  void answer_peers(const std::deque<Response>& agreed);
  // After a decision: the members asleep with a post on `board` are woken.
  void wake_sleepers(ops::LaneBoard* board, const std::vector<int>& ranks);
  void stay_awake();

  LaneContext ctx_;
  // The op posted here while holds_; kept between ops for its storage.
  Posted posted_;
  bool holds_ = false;
  ops::LaneBoard* asleep_on_ = nullptr;        // the board flagged asleep, if any
  bool reporting_ = false;                     // a voided op goes to the negotiation
  std::map<int32_t, ops::LaneBoard*> boards_;  // by set id, once ready (boards never go away)
  std::vector<KnownBoard> known_boards_;       // those boards, once each
  std::string signature_;                      // offer()'s, kept for its storage
  std::string wake_bytes_;                     // take_wakes()'s
};

// The bytes two members' posts for one op have alike: the cache slot each found its request in,
// and how many responses of its set each has run (a member can run an error response for a
// tensor it never submitted after another member posted, which would number their ops apart).
// The slot stands for the request, as a round's hit bits do: the caches change only in rounds,
// alike on every member, and a rank posts only with no round under way, so members that ran as
// many responses hold the same tensor in a slot, and a hit there means the request matches its
// metadata (ResponseCache::lookup).
void lane_signature(uint32_t slot, uint64_t set_ops, std::string* out);

}  // namespace hvdc::core
