// Executing responses: every rank runs the same list in the same order. Collectives go to the
// executor (and their backend); join and process set changes the engine runs itself.
#include "common/log.h"
#include "core/engine.h"

namespace hvdc::core {

namespace {

// Failures after which the ranks can no longer agree on what happened: end the engine's work.
bool is_fatal(hvd_status_t code) {
  return code == HVD_ERR_TRANSPORT || code == HVD_ERR_PEER_FAILURE || code == HVD_ERR_ABORTED ||
         code == HVD_ERR_SHUT_DOWN || code == HVD_ERR_TIMEOUT;
}

// A collective over data, which a backend runs; the others run in the engine, in order, once
// the collectives started before them finished.
bool runs_on_backend(const Response& response) {
  return response.kind == ResponseKind::kExecute && response.op_type != OpType::kJoin &&
         response.op_type != OpType::kProcessSetCreate &&
         response.op_type != OpType::kProcessSetDestroy;
}

}  // namespace

bool Engine::execute_responses() {
  if (responses_.empty()) return false;
  while (!responses_.empty() && terminated_.is_ok()) {
    if (finish_peer_shutdown()) break;
    if (!runs_on_backend(responses_.front()) && !executor_.idle()) break;
    Response response = std::move(responses_.front());
    responses_.pop_front();
    execute_one(std::move(response));
  }
  return true;
}

void Engine::execute_one(Response response) {
  SetState* set = member_set(response.process_set);
  // Gone: destroyed earlier in this order on every member, which failed its pending ops.
  if (set == nullptr) return;
  ++set->op_seq;
  std::vector<TensorEntry> entries;
  for (const std::string& name : response.names) {
    TensorEntry entry;
    if (queue_.take(response.process_set, name, &entry)) {
      entries.push_back(std::move(entry));
    } else if (response.kind != ResponseKind::kError) {
      HVDC_LOG_ERROR("response for tensor '%s', which is not pending here", name.c_str());
    }
  }
  tracer_.execute(response, true);
  if (runs_on_backend(response)) {
    executing_ = set;
    auto trace = tracer_.phases(response);
    executor_.start(std::move(response), std::move(entries), group_of(*set), negotiation_->joined(),
                    std::move(trace));
    executing_ = nullptr;
    finish_executed();
    return;
  }
  Status st = response.kind == ResponseKind::kError
                  ? Status(response.error_code, response.error_message)
                  : execute(response, entries);
  finish(FinishedOp{std::move(response), std::move(entries), st});
}

ops::Group Engine::group_of(const SetState& set) {
  ops::Group group;
  group.transport = transport_.get();
  group.members = set.info.ranks;
  group.index = set.info.index;
  group.context = set.info.context;
  group.seq = set.op_seq;
  group.interrupt = [this] { return interrupt_check(); };
  return group;
}

// Completes the collectives whose backend finished them; true if there were any.
bool Engine::finish_executed() {
  std::vector<FinishedOp> finished = executor_.poll();
  for (FinishedOp& op : finished) finish(std::move(op));
  return !finished.empty();
}

void Engine::finish(FinishedOp op) {
  const Response& response = op.response;
  Status st = op.status;
  tracer_.execute(response, false);
  tracer_.done(response, op.entries);
  count_executed(response);
  // A negotiated error (mismatch, stall timeout) concerns its tensor only and names it; a failed
  // data transfer leaves the ranks out of step.
  const bool fatal = response.kind != ResponseKind::kError && is_fatal(st.code());
  if (fatal && st.code() == HVD_ERR_TIMEOUT && stalls_ && terminated_.is_ok()) {
    st = stalls_->agree(st, [this] { return interrupt_check(); });
  }
  if (fatal) terminate(st, true);
  // After a failed transfer, transfers may still be in flight from these buffers: stop them
  // (after the notices above) before the callers may release the buffers.
  if (transport_) transport_->quiesce();
  for (TensorEntry& entry : op.entries) entry.state->complete(fatal ? op_failure(entry, st) : st);
}

void Engine::count_executed(const Response& response) {
  ++stats_.collectives;
  stats_.tensors += response.names.size();
  if (response.names.size() > 1) {
    ++stats_.fused_collectives;
    stats_.fused_tensors += response.names.size();
    stats_.fused_bytes += response_bytes(response);
  }
}

Status Engine::execute(const Response& response, std::vector<TensorEntry>& entries) {
  switch (response.op_type) {
    case OpType::kJoin:
      for (TensorEntry& entry : entries) entry.state->set_result_value(response.root);
      negotiation_->join_completed();
      return Status::ok();
    case OpType::kProcessSetCreate:
      return create_process_set(response, entries);
    case OpType::kProcessSetDestroy:
      return destroy_process_set(response);
    default:
      return Status(HVD_ERR_INTERNAL,
                    "op " + std::string(op_type_name(response.op_type)) + " runs on a backend");
  }
}

}  // namespace hvdc::core
