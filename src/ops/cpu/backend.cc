// The host backend: every rank runs the same collectives in the same order.
#include "ops/cpu/backend.h"

#include <algorithm>
#include <cstring>

#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "ops/cpu/allgather/allgather.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/broadcast/broadcast.h"
#include "ops/cpu/integer_average.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {

using common::make_error;

size_t element_count(const std::vector<int64_t>& shape, size_t from) {
  size_t n = 1;
  for (size_t i = from; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

CpuBackend::CpuBackend(const BackendOptions& options) : options_(options) {
  local_.min_bytes = options.local_min_bytes;
  local_.lane = options.lane;
  local_.reads_allowed = options.peer_reads;
  local_.stage_max_bytes = options.local_stage_bytes;
}

Status CpuBackend::start(const CollectiveArgs& op, std::unique_ptr<PendingCollective>* pending) {
  pending->reset();  // host collectives finish here
  switch (op.type) {
    case Collective::kAllreduce:
      return run_allreduce(op);
    case Collective::kAllgather:
      return run_allgather(op);
    case Collective::kBroadcast:
      return run_broadcast(op);
    case Collective::kBarrier:
      return Status::ok();  // ready only once every rank submitted it
    case Collective::kAlltoall:
      return run_alltoall(op);
    case Collective::kReducescatter:
      return run_reducescatter(op);
  }
  return make_error(HVD_ERR_INTERNAL, "collective %d is not executable", static_cast<int>(op.type));
}

LaneBoard* CpuBackend::lane(const Group& group) {
  if (!group.same_host || group.size() < 2) return nullptr;
  auto it = local_.sets.find(group.members);
  if (it == local_.sets.end()) return nullptr;
  local::Board* board = it->second.board.get();
  return board != nullptr && board->ready ? board : nullptr;
}

Comm comm_for(const Group& group) {
  Comm comm;
  comm.transport = group.transport;
  comm.members = group.members;
  comm.index = group.index;
  comm.context = group.context;
  comm.seq = group.seq;
  comm.interrupt = group.interrupt;
  comm.hosts = group.hosts;
  return comm;
}

Comm CpuBackend::make_comm(const CollectiveArgs& op) {
  Comm comm = comm_for(op.group);
  comm.scratch = &scratch_;
  comm.staging = &staging_;
  comm.deterministic = options_.deterministic;
  comm.lane = op.lane;
  comm.segment_bytes = options_.segment_bytes;
  comm.host_segment_bytes = options_.segment_bytes;
  if (!op.group.hosts.empty() && options_.cross_host_segment_bytes != 0) {
    comm.segment_bytes = std::min(comm.segment_bytes, options_.cross_host_segment_bytes);
    comm.pieces_across_hosts = true;
  }
  comm.small_bytes = options_.small_allreduce_bytes;
  if (!options_.hierarchical) comm.hosts.clear();
  if (op.group.same_host) comm.local = &local_;
  return comm;
}

// Each tensor's buffer (its output, holding the prescaled input); a joined rank that has no
// tensor of a name contributes zeros of the agreed size.
Pieces CpuBackend::allreduce_pieces(const CollectiveArgs& op) {
  const size_t esize = common::dtype_size(op.dtype);
  std::vector<Piece>& pieces = pieces_in_;
  pieces.clear();
  join_zeros_.clear();
  for (const TensorArgs& tensor : op.tensors) {
    const size_t count = static_cast<size_t>(tensor.count);
    if (tensor.output != nullptr) {
      if (op.prescale != 1.0) {
        scale(tensor.output, tensor.input, count, op.dtype, op.prescale);
      } else if (tensor.output != tensor.input && count > 0) {
        common::move_bytes(tensor.output, tensor.input, count * esize);
      }
      pieces.push_back({static_cast<char*>(tensor.output), count * esize});
    } else {
      join_zeros_.emplace_back(count * esize, 0);
      pieces.push_back({join_zeros_.back().data(), count * esize});
    }
  }
  return Pieces(pieces.data(), pieces.size());
}

// Out of place without a prescale, every tensor's input and output as two views of one layout,
// so that the algorithms read the inputs where they are instead of copying them into the outputs
// first, which would cost one more pass over memory. False (views untouched) when any tensor is in
// place, has no output (a joined rank), or overlaps its output.
bool separate_views(const CollectiveArgs& op, std::vector<Piece>* in, std::vector<Piece>* out) {
  if (op.prescale != 1.0) return false;
  const size_t esize = common::dtype_size(op.dtype);
  for (const TensorArgs& tensor : op.tensors) {
    const size_t n = static_cast<size_t>(tensor.count) * esize;
    const char* a = static_cast<const char*>(tensor.input);
    const char* b = static_cast<const char*>(tensor.output);
    if (b == nullptr || (n > 0 && a < b + n && b < a + n)) return false;
  }
  in->clear();
  out->clear();
  for (const TensorArgs& tensor : op.tensors) {
    const size_t n = static_cast<size_t>(tensor.count) * esize;
    in->push_back({static_cast<char*>(const_cast<void*>(tensor.input)), n});
    out->push_back({static_cast<char*>(tensor.output), n});
  }
  return true;
}

Status CpuBackend::run_allreduce(const CollectiveArgs& op) {
  Comm comm = make_comm(op);
  ReduceSpec spec;
  spec.dtype = op.dtype;
  spec.op = op.reduce_op;
  spec.divisor = op.reduce_op == HVD_OP_AVERAGE ? comm.size() : 1;
  spec.postscale = op.postscale;
  comm.trace = op.trace;
  // Every member makes the same choice of algorithm inside allreduce(): whether a member's own
  // tensors are in place or it has joined only changes its views.
  Status st;
  if (op.member_inputs != nullptr) {
    st = run_allreduce_of_inputs(comm, op, spec);
  } else if (separate_views(op, &pieces_in_, &pieces_out_)) {
    st = allreduce(comm, Pieces(pieces_in_.data(), pieces_in_.size()),
                   Pieces(pieces_out_.data(), pieces_out_.size()), spec);
  } else {
    const Pieces buf = allreduce_pieces(op);
    st = allreduce(comm, buf, buf, spec);
  }
  if (st.is_ok()) return st;
  if (op.tensors.size() == 1) {
    return st.with_context(common::strfmt("allreduce of '%s'", op.tensors[0].name.c_str()));
  }
  return st.with_context(common::strfmt("fused allreduce of '%s' and %zu more tensors",
                                        op.tensors[0].name.c_str(), op.tensors.size() - 1));
}

// The inputs came with the round; the outputs are the callers' (a rank with inputs never joined).
Status CpuBackend::run_allreduce_of_inputs(Comm& comm, const CollectiveArgs& op,
                                           const ReduceSpec& spec) {
  const size_t esize = common::dtype_size(op.dtype);
  std::vector<Piece>& outs = round_input_outs_;  // kept for its storage
  outs.clear();
  for (const TensorArgs& tensor : op.tensors) {
    if (tensor.output == nullptr) {
      return make_error(HVD_ERR_INTERNAL, "the round carried inputs for '%s', which has no output",
                        tensor.name.c_str());
    }
    outs.push_back({static_cast<char*>(tensor.output), static_cast<size_t>(tensor.count) * esize});
  }
  return allreduce_of_inputs(comm, *op.member_inputs, outs, spec);
}

Status allocate_rows(const TensorArgs& tensor, int32_t dtype, const char* what, int64_t rows,
                     char** out) {
  std::vector<int64_t> shape = tensor.shape;
  shape[0] = rows;
  const size_t total = element_count(shape) * common::dtype_size(dtype);
  *out = static_cast<char*>(tensor.allocate_output(shape, total));
  if (*out == nullptr && total > 0) {
    return make_error(HVD_ERR_OUT_OF_MEMORY,
                      "the output allocator returned NULL for %zu bytes of %s '%s'", total, what,
                      tensor.name.c_str());
  }
  return Status::ok();
}

Status CpuBackend::run_allgather(const CollectiveArgs& op) {
  const TensorArgs& tensor = op.tensors[0];
  const size_t esize = common::dtype_size(op.dtype);
  const size_t row_bytes = element_count(tensor.shape, 1) * esize;
  // A coordinator's response: one first dimension per member, or the blocks below overrun.
  const size_t members = op.group.members.size();
  if (op.sizes.size() != members) {
    return make_error(HVD_ERR_INTERNAL, "allgather '%s': %zu first dimensions for %zu members",
                      tensor.name.c_str(), op.sizes.size(), members);
  }
  std::vector<size_t> block_bytes;
  int64_t rows = 0;
  for (int64_t n : op.sizes) {
    block_bytes.push_back(static_cast<size_t>(n) * row_bytes);
    rows += n;
  }
  char* out = nullptr;
  HVDC_RETURN_IF_ERROR(allocate_rows(tensor, op.dtype, "ALLGATHER", rows, &out));
  Comm comm = make_comm(op);
  size_t offset = 0;
  for (int m = 0; m < comm.index; ++m) offset += block_bytes[m];
  if (block_bytes[comm.index] > 0) {
    common::copy_bytes(out + offset, tensor.input, block_bytes[comm.index]);
  }
  if (comm.size() == 1) return Status::ok();
  return allgather_ring(comm, out, block_bytes)
      .with_context(common::strfmt("allgather of '%s'", tensor.name.c_str()));
}

Status CpuBackend::run_broadcast(const CollectiveArgs& op) {
  const TensorArgs& tensor = op.tensors[0];
  const size_t bytes = element_count(tensor.shape) * common::dtype_size(op.dtype);
  Comm comm = make_comm(op);
  if (comm.index == op.root && tensor.output != tensor.input && bytes > 0) {
    common::move_bytes(tensor.output, tensor.input, bytes);
  }
  if (comm.size() == 1 || bytes == 0) return Status::ok();
  return broadcast_tree(comm, tensor.output, bytes, op.root)
      .with_context(common::strfmt("broadcast of '%s'", tensor.name.c_str()));
}

}  // namespace hvdc::ops::cpu
