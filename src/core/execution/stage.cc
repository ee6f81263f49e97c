// Executing responses (stage.h): every rank runs the same list in the same order.
#include "core/execution/stage.h"

#include "common/log.h"

namespace hvdc::core {

namespace {

// Failures after which the ranks can no longer agree on what happened: end the engine's work.
bool is_fatal(hvd_status_t code) {
  // A device error aborted the rank's NCCL communicator: its peers would wait in NCCL for it.
  return code == HVD_ERR_TRANSPORT || code == HVD_ERR_PEER_FAILURE || code == HVD_ERR_ABORTED ||
         code == HVD_ERR_SHUT_DOWN || code == HVD_ERR_TIMEOUT || code == HVD_ERR_DEVICE;
}

// A collective over data, which a backend runs; the others run in the engine, in order, once
// the collectives started before them finished.
bool runs_on_backend(const Response& response) {
  return response.kind == ResponseKind::kExecute && response.op_type != OpType::kJoin &&
         response.op_type != OpType::kProcessSetCreate &&
         response.op_type != OpType::kProcessSetDestroy;
}

}  // namespace

bool ExecutionStage::execute(std::deque<Response>* agreed) {
  if (agreed->empty()) return false;
  while (!agreed->empty() && ctx_.terminated->is_ok()) {
    if (ctx_.peer_shutdown_reached()) break;
    if (!runs_on_backend(agreed->front()) && !executor_.idle()) break;
    Response response = std::move(agreed->front());
    agreed->pop_front();
    execute_one(std::move(response));
  }
  return true;
}

void ExecutionStage::execute_one(Response&& response) {
  SetState* set = ctx_.sets->member(response.process_set);
  // Gone: destroyed earlier in this order on every member, which failed its pending ops.
  if (set == nullptr) return;
  ++set->op_seq;
  std::vector<TensorEntry> entries = std::move(spare_entries_);
  entries.clear();
  entries.reserve(response.names.size());
  // A rank that has joined contributes zeros to set 0's allreduces it did not submit.
  const bool joined_allreduce = ctx_.negotiation->joined() && response.process_set == 0 &&
                                response.op_type == OpType::kAllreduce;
  for (const std::string& name : response.names) {
    TensorEntry entry;
    if (ctx_.queue->take(response.process_set, name, &entry)) {
      entries.push_back(std::move(entry));
    } else if (response.kind != ResponseKind::kError && !joined_allreduce) {
      HVDC_LOG_ERROR("response for tensor '%s', which is not pending here", name.c_str());
    }
  }
  ctx_.tracer->execute(response, true);
  if (runs_on_backend(response)) {
    starting_ = set;
    auto trace = ctx_.tracer->phases(response);
    group_of(*set, &group_);
    executor_.start(std::move(response), std::move(entries), group_, ctx_.negotiation->joined(),
                    std::move(trace));
    starting_ = nullptr;
    finish_executed();
    return;
  }
  Status st = response.kind == ResponseKind::kError
                  ? Status(response.error_code, response.error_message)
                  : execute_here(response, entries);
  finish(FinishedOp{std::move(response), std::move(entries), st});
}

void ExecutionStage::group_of(const SetState& set, ops::Group* out) {
  ops::Group& group = *out;
  group.transport = ctx_.transport;
  group.members = set.info.ranks;
  group.index = set.info.index;
  group.context = set.info.context;
  group.seq = set.op_seq;
  group.interrupt = ctx_.interrupt;
  group.same_host = ctx_.same_host != nullptr;
  for (int rank : group.members) {
    group.same_host = group.same_host && (*ctx_.same_host)[rank];
  }
  // Across hosts, where each member runs: an allreduce can then keep its local steps on the
  // host (ops/cpu/allreduce/hierarchical.cc).
  group.hosts.clear();
  if (group.same_host || ctx_.host_of == nullptr) return;
  for (int rank : group.members) group.hosts.push_back((*ctx_.host_of)[rank]);
}

ops::LaneBoard* ExecutionStage::lane_board(const SetState& set) {
  ops::Backend* host = executor_.backend(HVD_DEVICE_CPU);
  if (host == nullptr) return nullptr;
  ops::Group group;
  group_of(set, &group);
  return host->lane(group);
}

bool ExecutionStage::finish_executed() {
  // The vector's storage is kept between passes; taken out while it is walked, so that a pass
  // run from inside finish() (it should not happen) would only allocate a vector of its own.
  std::vector<FinishedOp> finished = std::move(finished_);
  executor_.poll(&finished);
  for (FinishedOp& op : finished) finish(std::move(op));
  const bool any = !finished.empty();
  finished.clear();
  finished_ = std::move(finished);
  return any;
}

void ExecutionStage::finish(FinishedOp&& op) {
  const Response& response = op.response;
  Status st = op.status;
  ctx_.tracer->execute(response, false);
  ctx_.tracer->done(response, op.entries);
  count_executed(response);
  // A negotiated error (mismatch, stall timeout) concerns its tensor only and names it; a failed
  // data transfer leaves the ranks out of step.
  const bool fatal = response.kind != ResponseKind::kError && is_fatal(st.code());
  if (fatal && st.code() == HVD_ERR_TIMEOUT && ctx_.stalls && ctx_.terminated->is_ok()) {
    st = ctx_.stalls->agree(st, ctx_.interrupt);
  }
  if (fatal) ctx_.fail(st);
  // After a failed transfer, transfers may still be in flight from these buffers: stop them
  // (after the notices above) before the callers may release the buffers.
  if (ctx_.transport) ctx_.transport->quiesce();
  for (TensorEntry& entry : op.entries) entry.state->complete(fatal ? op_failure(entry, st) : st);
  ctx_.negotiation->recycle_response(std::move(op.response));
  op.entries.clear();
  if (spare_entries_.capacity() < op.entries.capacity()) spare_entries_ = std::move(op.entries);
}

void ExecutionStage::count_executed(const Response& response) {
  ++ctx_.stats->collectives;
  if (response.inputs) ++ctx_.stats->round_input_collectives;
  ctx_.stats->tensors += response.names.size();
  if (response.names.size() > 1) {
    ++ctx_.stats->fused_collectives;
    ctx_.stats->fused_tensors += response.names.size();
    ctx_.stats->fused_bytes += response_bytes(response);
  }
}

Status ExecutionStage::execute_here(const Response& response, std::vector<TensorEntry>& entries) {
  switch (response.op_type) {
    case OpType::kJoin:
      for (TensorEntry& entry : entries) entry.state->set_result_value(response.root);
      ctx_.negotiation->join_completed();
      return Status::ok();
    case OpType::kProcessSetCreate: {
      Status status = ctx_.sets->create(response, entries);
      if (status.is_ok()) ctx_.negotiation->release_early_requests();
      return status;
    }
    case OpType::kProcessSetDestroy:
      return ctx_.sets->destroy(response, *ctx_.queue);
    default:
      return Status(HVD_ERR_INTERNAL,
                    "op " + std::string(op_type_name(response.op_type)) + " runs on a backend");
  }
}

}  // namespace hvdc::core
