// The execution stage: runs the agreed responses in order. Collectives go to the executor (and
// their backend) and complete when it reports them finished; join and process set changes run
// here, once the collectives before them finished. A failed transfer ends the engine's work,
// after the stall agreement names whom the ranks waited for.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/engine_stats.h"
#include "core/execution/executor.h"
#include "core/faults/stall_agreement.h"
#include "core/negotiation/negotiation.h"
#include "core/sets/member_sets.h"
#include "core/tensor_queue.h"
#include "core/tracing/tracer.h"
#include "transport/transport.h"

namespace hvdc::core {

// What execution works on, owned by the engine (its passes only, one thread at a time).
struct StageContext {
  transport::Transport* transport = nullptr;  // null on a single rank
  MemberSets* sets = nullptr;
  TensorQueue* queue = nullptr;
  EngineStats* stats = nullptr;
  Tracer* tracer = nullptr;
  Negotiation* negotiation = nullptr;  // whether this rank has joined
  StallAgreement* stalls = nullptr;    // null without a transport
  // Ends the engine's work on every rank.
  std::function<void(const Status&)> fail;
  // Called while a collective waits for peers; non-ok once the engine's work ended.
  transport::Interrupt interrupt;
  // True once a peer that shut down has nothing more to run with this rank (its work ends).
  std::function<bool()> peer_shutdown_reached;
  const Status* terminated = nullptr;            // non-ok once the engine's work ended
  const std::vector<bool>* same_host = nullptr;  // per rank: on this rank's host
  const std::vector<int>* host_of = nullptr;     // per rank: its host's number (Topology)
};

class ExecutionStage {
 public:
  ExecutionStage(std::map<int32_t, std::unique_ptr<ops::Backend>> backends, StageContext context)
      : ctx_(std::move(context)), executor_(std::move(backends)) {}

  // Starts or runs the agreed responses, front first; true if there were any.
  bool execute(std::deque<Response>* agreed);
  // Completes the collectives whose backend finished them; true if there were any.
  bool finish_executed();
  bool idle() const { return executor_.idle(); }
  // The engine's work ended: the backends stop what they have in flight (ops::Backend::abort).
  void abort(const Status& why) { executor_.abort(why); }
  // Started, not yet finished (for hang reports).
  std::vector<const Response*> running() const { return executor_.running(); }
  // The lane of a set whose members share this host (ops/lane.h): null until the host backend
  // has the set's board ready.
  ops::LaneBoard* lane_board(const SetState& set);
  // The set of the collective being started now, if any (its op number is the running one's).
  const SetState* starting() const { return starting_; }

 private:
  void execute_one(Response&& response);
  void finish(FinishedOp&& op);
  void count_executed(const Response& response);
  Status execute_here(const Response& response, std::vector<TensorEntry>& entries);
  // Into *out's storage (the last op's group, say).
  void group_of(const SetState& set, ops::Group* out);

  StageContext ctx_;
  Executor executor_;
  SetState* starting_ = nullptr;
  std::vector<FinishedOp> finished_;  // finish_executed()'s, kept for its storage
  // The last op's group and entries vector, kept for their storage: a warm op allocates neither.
  ops::Group group_;
  std::vector<TensorEntry> spare_entries_;
};

}  // namespace hvdc::core
