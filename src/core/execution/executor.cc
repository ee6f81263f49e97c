#include "core/execution/executor.h"

#include <utility>

namespace hvdc::core {

using common::make_error;

namespace {

bool to_collective(OpType type, ops::Collective* out) {
  switch (type) {
    case OpType::kAllreduce:
      *out = ops::Collective::kAllreduce;
      return true;
    case OpType::kAllgather:
      *out = ops::Collective::kAllgather;
      return true;
    case OpType::kBroadcast:
      *out = ops::Collective::kBroadcast;
      return true;
    case OpType::kBarrier:
      *out = ops::Collective::kBarrier;
      return true;
    case OpType::kAlltoall:
      *out = ops::Collective::kAlltoall;
      return true;
    case OpType::kReducescatter:
      *out = ops::Collective::kReducescatter;
      return true;
    case OpType::kJoin:
    case OpType::kProcessSetCreate:
    case OpType::kProcessSetDestroy:
      break;  // not collectives over data (the engine runs them)
  }
  return false;
}

// What the backend sees of one entry, into *t's storage (the last op's): its buffers, and its
// op state's output allocator.
void fill_tensor_args(TensorEntry& entry, ops::TensorArgs* t) {
  const Request& r = entry.request;
  t->name = r.name;
  t->shape = r.shape;
  t->input = entry.input;
  t->output = entry.output;
  t->count = 0;
  t->splits = entry.splits;
  t->stream = entry.cuda_stream;
  t->stream_ordered = entry.stream_ordered;
  t->submission = entry.submission;
  // One pointer each, which std::function keeps without allocating: the entry outlives the op
  // (Executor::Running holds it until the backend finished).
  const TensorEntry* owner = &entry;
  t->allocate_output = [owner](const std::vector<int64_t>& shape, size_t bytes) {
    const Request& req = owner->request;
    return owner->state->allocate_output(req.dtype, shape, {req.device_type, req.device_id}, bytes);
  };
  OpState* state = entry.state.get();
  t->set_received_splits = [state](std::vector<int64_t> rows) {
    state->set_received_splits(std::move(rows));
  };
}

// What the arguments keep of an op once the backend started it: nothing that holds a resource
// (a device submission) or points into the op's entries.
void release(ops::CollectiveArgs* op) {
  for (ops::TensorArgs& t : op->tensors) {
    t.submission.reset();
    t.allocate_output = nullptr;
    t.set_received_splits = nullptr;
  }
  op->trace = nullptr;
  op->member_inputs = nullptr;
}

}  // namespace

Executor::Executor(std::map<int32_t, std::unique_ptr<ops::Backend>> backends)
    : backends_(std::move(backends)) {}

Executor::~Executor() = default;

void Executor::start(Response&& response, std::vector<TensorEntry>&& entries,
                     const ops::Group& group, bool joined,
                     std::function<void(const char*, bool)>&& trace) {
  // A node of a finished op is reused: each holds a whole response, and a queue that allocated
  // one per op (std::deque's node for so large an element) cost every small op an allocation.
  if (spare_.empty()) {
    running_.emplace_back();
  } else {
    running_.splice(running_.end(), spare_, spare_.begin());
  }
  Running& running = running_.back();
  running.op.response = std::move(response);
  running.op.entries = std::move(entries);
  running.op.status = launch(running, group, joined, std::move(trace));
  if (!running.op.status.is_ok()) running.pending.reset();
}

Status Executor::launch(Running& running, const ops::Group& group, bool joined,
                        std::function<void(const char*, bool)>&& trace) {
  const Response& response = running.op.response;
  const std::vector<TensorEntry>& entries = running.op.entries;
  const bool joined_allreduce =
      joined && response.process_set == 0 && response.op_type == OpType::kAllreduce;
  if (entries.size() != response.names.size() && !joined_allreduce) {
    return make_error(HVD_ERR_INTERNAL, "%zu of the %zu tensors of a %s are not pending here",
                      response.names.size() - entries.size(), response.names.size(),
                      op_type_name(response.op_type));
  }
  ops::Backend* backend = nullptr;
  for (const TensorEntry& entry : entries) {
    auto it = backends_.find(entry.request.device_type);
    if (it == backends_.end()) {
      return make_error(HVD_ERR_UNSUPPORTED,
                        "tensor '%s': no data path for device type %d here (every rank reports "
                        "this error)",
                        entry.request.name.c_str(), static_cast<int>(entry.request.device_type));
    }
    backend = it->second.get();
  }
  // A joined rank with no entry at all runs the allreduce on the agreed device's backend.
  if (backend == nullptr) {
    auto it = backends_.find(response.device_type);
    if (it == backends_.end()) {
      return make_error(HVD_ERR_UNSUPPORTED, "no data path for device type %d here",
                        static_cast<int>(response.device_type));
    }
    backend = it->second.get();
  }
  ops::CollectiveArgs own;
  ops::CollectiveArgs& op = args_in_use_ ? own : args_;
  const bool reused = !args_in_use_;
  HVDC_RETURN_IF_ERROR(describe(running, group, &op));
  op.trace = std::move(trace);
  args_in_use_ = true;
  Status st = backend->start(op, &running.pending);
  if (reused) {
    release(&op);
    args_in_use_ = false;
  }
  return st;
}

Status Executor::describe(Running& running, const ops::Group& group,
                          ops::CollectiveArgs* out) const {
  const Response& response = running.op.response;
  std::vector<TensorEntry>& entries = running.op.entries;
  ops::CollectiveArgs& op = *out;
  if (!to_collective(response.op_type, &op.type)) {
    return make_error(HVD_ERR_INTERNAL, "op %s is not executable", op_type_name(response.op_type));
  }
  op.dtype = response.dtype;
  op.reduce_op = response.reduce_op;
  op.root = response.root;
  op.prescale = response.prescale;
  op.postscale = response.postscale;
  // The response carries the first rank's device; each rank runs on its own tensors' device.
  op.device_id = entries.empty() ? response.device_id : entries.front().request.device_id;
  op.flags = response.flags;
  op.sizes = response.sizes;
  op.tensors.resize(response.names.size());
  size_t e = 0;
  for (size_t i = 0; i < response.names.size(); ++i) {
    ops::TensorArgs& t = op.tensors[i];
    if (e < entries.size() && entries[e].request.name == response.names[i]) {
      fill_tensor_args(entries[e++], &t);
    } else {
      t = ops::TensorArgs{};  // a joined rank: zeros (ops::TensorArgs)
      t.name = response.names[i];
    }
    if (i < response.counts.size()) t.count = response.counts[i];
  }
  op.member_inputs = response.inputs ? &response.inputs->members : nullptr;
  op.lane = response.lane;
  op.group = group;
  return Status::ok();
}

void Executor::poll(std::vector<FinishedOp>* finished) {
  finished->clear();
  for (Running& running : running_) {
    if (running.pending && running.pending->poll(&running.op.status)) running.pending.reset();
  }
  while (!running_.empty() && !running_.front().pending) {
    finished->push_back(std::move(running_.front().op));
    spare_.splice(spare_.end(), running_, running_.begin());
  }
}

void Executor::abort(const Status& why) {
  for (auto& [type, backend] : backends_) backend->abort(why);
}

std::vector<const Response*> Executor::running() const {
  std::vector<const Response*> out;
  for (const Running& running : running_) out.push_back(&running.op.response);
  return out;
}

}  // namespace hvdc::core
