// Executing responses: every rank runs the same list in the same order.
#include <cstring>

#include "common/dtype.h"
#include "common/log.h"
#include "core/engine.h"
#include "ops/cpu/allgather/allgather.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/broadcast/broadcast.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::core {

using common::make_error;

namespace {

// Failures after which the ranks can no longer agree on what happened: end the engine's work.
bool is_fatal(hvd_status_t code) {
  return code == HVD_ERR_TRANSPORT || code == HVD_ERR_PEER_FAILURE || code == HVD_ERR_ABORTED ||
         code == HVD_ERR_SHUT_DOWN || code == HVD_ERR_TIMEOUT;
}

}  // namespace

bool Engine::execute_responses() {
  if (responses_.empty()) return false;
  while (!responses_.empty() && terminated_.is_ok()) {
    if (finish_peer_shutdown()) break;
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
  executing_ = set;
  executing_response_ = &response;
  trace_execute(response, true);
  Status st = response.kind == ResponseKind::kError
                  ? Status(response.error_code, response.error_message)
                  : execute(response, entries);
  trace_execute(response, false);
  trace_done(response, entries);
  executing_ = nullptr;
  executing_response_ = nullptr;
  count_executed(response);
  // A negotiated error (mismatch, stall timeout) concerns its tensor only and names it; a failed
  // data transfer leaves the ranks out of step.
  const bool fatal = response.kind != ResponseKind::kError && is_fatal(st.code());
  if (fatal && st.code() == HVD_ERR_TIMEOUT) st = agree_on_stall(st);
  if (fatal) terminate(st, true);
  // After a failed transfer, transfers may still be in flight from these buffers: stop them
  // (after the notices above) before the callers may release the buffers.
  if (transport_) transport_->quiesce();
  for (TensorEntry& entry : entries) entry.state->complete(fatal ? op_failure(entry, st) : st);
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
      self_joined_ = false;
      return Status::ok();
    case OpType::kProcessSetCreate:
      return create_process_set(response, entries);
    case OpType::kProcessSetDestroy:
      return destroy_process_set(response);
    default:
      return run_collective(response, entries);
  }
}

Status Engine::run_collective(const Response& response, std::vector<TensorEntry>& entries) {
  const bool joined_allreduce =
      self_joined_ && response.process_set == 0 && response.op_type == OpType::kAllreduce;
  if (entries.size() != response.names.size() && !joined_allreduce) {
    return make_error(HVD_ERR_INTERNAL, "%zu of the %zu tensors of a %s are not pending here",
                      response.names.size() - entries.size(), response.names.size(),
                      op_type_name(response.op_type));
  }
  for (const TensorEntry& entry : entries) {
    if (entry.request.device_type != HVD_DEVICE_CPU) {
      return make_error(HVD_ERR_UNSUPPORTED,
                        "tensor '%s' is on a CUDA device; this build of hvdc has no GPU data path "
                        "yet (every rank reports this error)",
                        entry.request.name.c_str());
    }
  }
  switch (response.op_type) {
    case OpType::kAllreduce:
      return run_allreduce(response, entries);
    case OpType::kAllgather:
      return run_allgather(response, entries[0]);
    case OpType::kBroadcast:
      return run_broadcast(entries[0]);
    case OpType::kBarrier:
      return Status::ok();  // ready only once every rank submitted it
    case OpType::kAlltoall:
      return run_alltoall(entries[0]);
    case OpType::kReducescatter:
      return run_reducescatter(response, entries[0]);
    case OpType::kJoin:
    case OpType::kProcessSetCreate:
    case OpType::kProcessSetDestroy:
      break;  // not collectives over data (execute())
  }
  return make_error(HVD_ERR_INTERNAL, "op %s is not executable", op_type_name(response.op_type));
}

ops::cpu::Comm Engine::make_comm() {
  ops::cpu::Comm comm;
  comm.transport = transport_.get();
  comm.members = executing_->info.ranks;
  comm.index = executing_->info.index;
  comm.context = executing_->info.context;
  comm.seq = executing_->op_seq;
  comm.interrupt = [this] { return interrupt_check(); };
  comm.scratch = &scratch_;
  comm.staging = &staging_;
  comm.deterministic = config_.deterministic;
  comm.segment_bytes = config_.segment_bytes;
  comm.small_bytes = config_.small_allreduce_bytes;
  return comm;
}

// Each tensor's buffer (its output, holding the prescaled input); a joined rank that has no
// entry for a tensor contributes zeros of the response's size.
std::vector<ops::cpu::Piece> Engine::allreduce_pieces(const Response& response,
                                                      std::vector<TensorEntry>& entries) {
  const size_t esize = common::dtype_size(response.dtype);
  std::vector<ops::cpu::Piece> pieces;
  join_zeros_.clear();
  size_t e = 0;
  for (size_t i = 0; i < response.names.size(); ++i) {
    const size_t count = static_cast<size_t>(response.counts[i]);
    if (e < entries.size() && entries[e].request.name == response.names[i]) {
      TensorEntry& entry = entries[e++];
      if (entry.request.prescale != 1.0) {
        ops::cpu::scale(entry.output, entry.input, count, entry.request.dtype,
                        entry.request.prescale);
      } else if (entry.output != entry.input && count > 0) {
        std::memmove(entry.output, entry.input, count * esize);
      }
      pieces.push_back({static_cast<char*>(entry.output), count * esize});
    } else {
      join_zeros_.emplace_back(count * esize, 0);
      pieces.push_back({join_zeros_.back().data(), count * esize});
    }
  }
  return pieces;
}

Status Engine::run_allreduce(const Response& response, std::vector<TensorEntry>& entries) {
  std::vector<ops::cpu::Piece> pieces = allreduce_pieces(response, entries);
  ops::cpu::Comm comm = make_comm();
  ops::cpu::ReduceSpec spec;
  spec.dtype = response.dtype;
  spec.op = response.reduce_op;
  spec.divisor = response.reduce_op == HVD_OP_AVERAGE ? comm.size() : 1;
  spec.postscale = response.postscale;
  comm.trace = trace_phase(response);
  Status st = ops::cpu::allreduce(comm, ops::cpu::Pieces(std::move(pieces)), spec);
  if (st.is_ok()) return st;
  if (response.names.size() == 1) {
    return st.with_context(common::strfmt("allreduce of '%s'", response.names[0].c_str()));
  }
  return st.with_context(common::strfmt("fused allreduce of '%s' and %zu more tensors",
                                        response.names[0].c_str(), response.names.size() - 1));
}

Status Engine::allocate_rows(TensorEntry& entry, int64_t rows, char** out) {
  const Request& r = entry.request;
  std::vector<int64_t> shape = r.shape;
  shape[0] = rows;
  const size_t total = element_count(shape) * common::dtype_size(r.dtype);
  *out = static_cast<char*>(entry.state->allocate_output(
      r.dtype, shape, hvd_device_t{r.device_type, r.device_id}, total));
  if (*out == nullptr && total > 0) {
    return make_error(HVD_ERR_OUT_OF_MEMORY,
                      "the output allocator returned NULL for %zu bytes of %s '%s'", total,
                      op_type_name(r.op_type), r.name.c_str());
  }
  return Status::ok();
}

Status Engine::run_allgather(const Response& response, TensorEntry& entry) {
  const Request& r = entry.request;
  const size_t esize = common::dtype_size(r.dtype);
  const size_t row_bytes = element_count(r.shape, 1) * esize;
  // A coordinator's response: one first dimension per member, or the blocks below overrun.
  const size_t members = member_set(response.process_set)->info.ranks.size();
  if (response.sizes.size() != members) {
    return make_error(HVD_ERR_INTERNAL, "allgather '%s': %zu first dimensions for %zu members",
                      r.name.c_str(), response.sizes.size(), members);
  }
  std::vector<size_t> block_bytes;
  int64_t rows = 0;
  for (int64_t n : response.sizes) {
    block_bytes.push_back(static_cast<size_t>(n) * row_bytes);
    rows += n;
  }
  char* out = nullptr;
  HVDC_RETURN_IF_ERROR(allocate_rows(entry, rows, &out));
  ops::cpu::Comm comm = make_comm();
  size_t offset = 0;
  for (int m = 0; m < comm.index; ++m) offset += block_bytes[m];
  if (block_bytes[comm.index] > 0) {
    std::memcpy(out + offset, entry.input, block_bytes[comm.index]);
  }
  if (comm.size() == 1) return Status::ok();
  return ops::cpu::allgather_ring(comm, out, block_bytes)
      .with_context(common::strfmt("allgather of '%s'", r.name.c_str()));
}

Status Engine::run_broadcast(TensorEntry& entry) {
  const Request& r = entry.request;
  const size_t bytes = element_count(r.shape) * common::dtype_size(r.dtype);
  ops::cpu::Comm comm = make_comm();
  if (comm.index == r.root && entry.output != entry.input && bytes > 0) {
    std::memmove(entry.output, entry.input, bytes);
  }
  if (comm.size() == 1 || bytes == 0) return Status::ok();
  return ops::cpu::broadcast_tree(comm, entry.output, bytes, r.root)
      .with_context(common::strfmt("broadcast of '%s'", r.name.c_str()));
}

}  // namespace hvdc::core
