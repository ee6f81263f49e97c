// The collective entry points: check arguments, build the request, hand it to the engine.
#include "api/api_state.h"
#include "api/validate.h"

#include <algorithm>
#include <cstring>

using hvdc::api::current_engine;
using hvdc::api::guarded;
using hvdc::api::state;
using hvdc::common::Status;
using hvdc::core::Engine;
using hvdc::core::OpType;
using hvdc::core::Request;

namespace {

Status submit(Engine* engine, Request request, const void* input, void* output,
              const hvd_op_args_t& args, hvd_handle_t* handle, std::vector<int64_t> splits = {}) {
  auto op = std::make_shared<hvdc::core::OpState>(args.on_done, args.on_done_user_data);
  op->set_allocator(args.alloc, args.alloc_user_data);
  const hvd_handle_t h = state().handles.insert(op);
  op->set_handle(h);
  hvdc::core::TensorEntry entry;
  entry.request = std::move(request);
  entry.input = input;
  entry.output = output;
  entry.state = op;
  entry.splits = std::move(splits);
  Status st = hvdc::api::apply_device_args(args, &entry.request, &entry);
  if (st.is_ok()) st = engine->enqueue(std::move(entry));
  if (!st.is_ok()) {
    state().handles.erase(h);
    return st;
  }
  *handle = h;
  return Status::ok();
}

Status set_name(Engine* engine, const char* name, OpType type, Request* r) {
  if (name == nullptr) {
    r->name = engine->auto_name(type, r->process_set);
    return Status::ok();
  }
  HVDC_RETURN_IF_ERROR(hvdc::api::check_name(name));
  r->name = name;
  return Status::ok();
}

// What every collective entry point does before and after its own checks.
struct Call {
  Engine* engine = nullptr;
  Request request;
  hvd_op_args_t args;
  std::shared_ptr<const hvdc::core::ProcessSetInfo> set;  // the one args->process_set names
  int set_size() const { return static_cast<int>(set->ranks.size()); }
};

// Checks the handle pointer, finds the engine, reads args and, where the op takes a tensor,
// checks it (and that output is given when the op writes one of nonzero size).
Status begin(OpType type, hvd_handle_t* handle, const hvd_op_args_t* args,
             const hvd_tensor_t* input, const void* output, bool writes_output, Call* call) {
  if (handle == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
  HVDC_RETURN_IF_ERROR(current_engine(&call->engine));
  call->request.op_type = type;
  if (type != OpType::kBarrier) {
    HVDC_RETURN_IF_ERROR(hvdc::api::check_tensor(input, "input", &call->request));
  }
  if (writes_output && output == nullptr && hvdc::core::element_count(call->request.shape) > 0) {
    return Status(HVD_ERR_INVALID_ARGUMENT, "output is NULL");
  }
  HVDC_RETURN_IF_ERROR(hvdc::api::read_op_args(args, &call->args));
  HVDC_RETURN_IF_ERROR(hvdc::api::member_process_set(call->engine->process_sets(),
                                                     call->args.process_set,
                                                     call->engine->topology().rank, &call->set));
  call->request.process_set = call->args.process_set;
  return Status::ok();
}

// Names the request and hands it to the engine.
Status finish(Call& call, const char* name, const void* input, void* output, hvd_handle_t* handle,
              std::vector<int64_t> splits = {}) {
  HVDC_RETURN_IF_ERROR(set_name(call.engine, name, call.request.op_type, &call.request));
  return submit(call.engine, std::move(call.request), input, output, call.args, handle,
                std::move(splits));
}

// Ops that split or concatenate along the first dimension need one.
Status require_first_dim(const Request& r, const char* op, const char* what) {
  if (!r.shape.empty()) return Status::ok();
  return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                  "input->ndim is 0: %s %s, so the tensor needs at least one", op,
                                  what);
}

// Alltoall's rows per destination: given, they must be non-negative and add up to the first
// dimension; absent, the first dimension must divide evenly.
Status read_splits(const int32_t* splits, int size, const Request& r, std::vector<int64_t>* out) {
  const int64_t rows = r.shape[0];
  if (splits == nullptr) {
    if (rows % size != 0) {
      return hvdc::common::make_error(
          HVD_ERR_INVALID_ARGUMENT,
          "input->shape[0] = %lld does not divide evenly over %d ranks; pass splits",
          static_cast<long long>(rows), size);
    }
    return Status::ok();
  }
  int64_t total = 0;
  for (int i = 0; i < size; ++i) {
    if (splits[i] < 0) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT, "splits[%d] is negative (%d)", i,
                                      splits[i]);
    }
    total += splits[i];
    out->push_back(splits[i]);
  }
  if (total != rows) {
    return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                    "splits add up to %lld rows but input->shape[0] is %lld",
                                    static_cast<long long>(total), static_cast<long long>(rows));
  }
  return Status::ok();
}

}  // namespace

extern "C" {

hvd_status_t hvd_op_args_init(hvd_op_args_t* args, size_t struct_size) {
  if (args == nullptr) {
    return hvdc::api::report(Status(HVD_ERR_INVALID_ARGUMENT, "args is NULL"));
  }
  if (struct_size < sizeof(uint32_t)) {
    return hvdc::api::report(hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                                      "struct_size %zu is too small", struct_size));
  }
  hvd_op_args_t defaults = {};
  defaults.struct_size = static_cast<uint32_t>(std::min(struct_size, sizeof(hvd_op_args_t)));
  defaults.prescale_factor = 1.0;
  defaults.postscale_factor = 1.0;
  std::memcpy(args, &defaults, defaults.struct_size);
  return HVD_SUCCESS;
}

hvd_status_t hvd_allreduce_async(const hvd_tensor_t* input, void* output, int32_t reduce_op,
                                 const char* name, const hvd_op_args_t* args,
                                 hvd_handle_t* handle) {
  return guarded([&] {
    Call call;
    HVDC_RETURN_IF_ERROR(begin(OpType::kAllreduce, handle, args, input, output, true, &call));
    HVDC_RETURN_IF_ERROR(hvdc::api::check_reduce_op(reduce_op, call.request.dtype));
    call.request.reduce_op = reduce_op;
    call.request.prescale = call.args.prescale_factor;
    call.request.postscale = call.args.postscale_factor;
    return finish(call, name, input->data, output, handle);
  });
}

hvd_status_t hvd_allgather_async(const hvd_tensor_t* input, const char* name,
                                 const hvd_op_args_t* args, hvd_handle_t* handle) {
  return guarded([&] {
    Call call;
    HVDC_RETURN_IF_ERROR(begin(OpType::kAllgather, handle, args, input, nullptr, false, &call));
    HVDC_RETURN_IF_ERROR(
        require_first_dim(call.request, "allgather", "concatenates along the first dimension"));
    return finish(call, name, input->data, nullptr, handle);
  });
}

hvd_status_t hvd_broadcast_async(const hvd_tensor_t* input, void* output, int32_t root_rank,
                                 const char* name, const hvd_op_args_t* args,
                                 hvd_handle_t* handle) {
  return guarded([&] {
    Call call;
    HVDC_RETURN_IF_ERROR(begin(OpType::kBroadcast, handle, args, input, output, true, &call));
    const int size = call.set_size();
    if (root_rank < 0 || root_rank >= size) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                      "root_rank %d is outside [0, %d) (process set %d)", root_rank,
                                      size, call.set->id);
    }
    call.request.root = root_rank;
    return finish(call, name, input->data, output, handle);
  });
}

hvd_status_t hvd_alltoall_async(const hvd_tensor_t* input, const int32_t* splits, const char* name,
                                const hvd_op_args_t* args, hvd_handle_t* handle) {
  return guarded([&] {
    Call call;
    HVDC_RETURN_IF_ERROR(begin(OpType::kAlltoall, handle, args, input, nullptr, false, &call));
    HVDC_RETURN_IF_ERROR(require_first_dim(call.request, "alltoall", "splits the first dimension"));
    std::vector<int64_t> rows;
    HVDC_RETURN_IF_ERROR(read_splits(splits, call.set_size(), call.request, &rows));
    return finish(call, name, input->data, nullptr, handle, std::move(rows));
  });
}

hvd_status_t hvd_reducescatter_async(const hvd_tensor_t* input, void* output, int32_t reduce_op,
                                     const char* name, const hvd_op_args_t* args,
                                     hvd_handle_t* handle) {
  return guarded([&] {
    Call call;
    HVDC_RETURN_IF_ERROR(begin(OpType::kReducescatter, handle, args, input, output, true, &call));
    HVDC_RETURN_IF_ERROR(
        require_first_dim(call.request, "reducescatter", "splits the first dimension"));
    if (reduce_op != HVD_OP_SUM && reduce_op != HVD_OP_AVERAGE) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT,
                                      "reduce_op %d: reducescatter supports HVD_OP_SUM and "
                                      "HVD_OP_AVERAGE",
                                      reduce_op);
    }
    HVDC_RETURN_IF_ERROR(hvdc::api::check_reduce_op(reduce_op, call.request.dtype));
    call.request.reduce_op = reduce_op;
    call.request.prescale = call.args.prescale_factor;
    call.request.postscale = call.args.postscale_factor;
    return finish(call, name, input->data, output, handle);
  });
}

hvd_status_t hvd_join(int32_t* last_joined_rank) {
  return guarded([&] {
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    Request request;
    request.name = hvdc::core::kJoinName;
    request.op_type = OpType::kJoin;
    request.dtype = HVD_UINT8;
    int32_t last = -1;
    HVDC_RETURN_IF_ERROR(hvdc::api::run_blocking(engine, std::move(request), &last));
    if (last_joined_rank != nullptr) *last_joined_rank = last;
    return Status::ok();
  });
}

hvd_status_t hvd_barrier_async(const char* name, const hvd_op_args_t* args, hvd_handle_t* handle) {
  return guarded([&] {
    Call call;
    HVDC_RETURN_IF_ERROR(begin(OpType::kBarrier, handle, args, nullptr, nullptr, false, &call));
    call.request.dtype = HVD_UINT8;
    return finish(call, name, nullptr, nullptr, handle);
  });
}

}  // extern "C"
