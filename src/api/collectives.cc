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
              const hvd_op_args_t& args, hvd_handle_t* handle) {
  auto op = std::make_shared<hvdc::core::OpState>(args.on_done, args.on_done_user_data);
  op->set_allocator(args.alloc, args.alloc_user_data);
  const hvd_handle_t h = state().handles.insert(op);
  op->set_handle(h);
  hvdc::core::TensorEntry entry;
  entry.request = std::move(request);
  entry.input = input;
  entry.output = output;
  entry.state = op;
  Status st = engine->enqueue(std::move(entry));
  if (!st.is_ok()) {
    state().handles.erase(h);
    return st;
  }
  *handle = h;
  return Status::ok();
}

size_t element_count(const Request& r) {
  size_t n = 1;
  for (int64_t d : r.shape) n *= static_cast<size_t>(d);
  return n;
}

Status set_name(Engine* engine, const char* name, OpType type, Request* r) {
  if (name == nullptr) {
    r->name = engine->auto_name(type);
    return Status::ok();
  }
  HVDC_RETURN_IF_ERROR(hvdc::api::check_name(name));
  r->name = name;
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
    if (handle == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    Request r;
    r.op_type = OpType::kAllreduce;
    HVDC_RETURN_IF_ERROR(hvdc::api::check_tensor(input, "input", &r));
    if (output == nullptr && element_count(r) > 0) {
      return Status(HVD_ERR_INVALID_ARGUMENT, "output is NULL");
    }
    HVDC_RETURN_IF_ERROR(hvdc::api::check_reduce_op(reduce_op, r.dtype));
    hvd_op_args_t a;
    HVDC_RETURN_IF_ERROR(hvdc::api::read_op_args(args, &a));
    HVDC_RETURN_IF_ERROR(set_name(engine, name, OpType::kAllreduce, &r));
    r.reduce_op = reduce_op;
    r.prescale = a.prescale_factor;
    r.postscale = a.postscale_factor;
    return submit(engine, std::move(r), input->data, output, a, handle);
  });
}

hvd_status_t hvd_allgather_async(const hvd_tensor_t* input, const char* name,
                                 const hvd_op_args_t* args, hvd_handle_t* handle) {
  return guarded([&] {
    if (handle == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    Request r;
    r.op_type = OpType::kAllgather;
    HVDC_RETURN_IF_ERROR(hvdc::api::check_tensor(input, "input", &r));
    if (r.shape.empty()) {
      return Status(HVD_ERR_INVALID_ARGUMENT,
                    "input->ndim is 0: allgather concatenates along the first dimension, so the "
                    "tensor needs at least one");
    }
    hvd_op_args_t a;
    HVDC_RETURN_IF_ERROR(hvdc::api::read_op_args(args, &a));
    HVDC_RETURN_IF_ERROR(set_name(engine, name, OpType::kAllgather, &r));
    return submit(engine, std::move(r), input->data, nullptr, a, handle);
  });
}

hvd_status_t hvd_broadcast_async(const hvd_tensor_t* input, void* output, int32_t root_rank,
                                 const char* name, const hvd_op_args_t* args,
                                 hvd_handle_t* handle) {
  return guarded([&] {
    if (handle == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    const int size = engine->topology().size;
    if (root_rank < 0 || root_rank >= size) {
      return hvdc::common::make_error(HVD_ERR_INVALID_ARGUMENT, "root_rank %d is outside [0, %d)",
                                      root_rank, size);
    }
    Request r;
    r.op_type = OpType::kBroadcast;
    r.root = root_rank;
    HVDC_RETURN_IF_ERROR(hvdc::api::check_tensor(input, "input", &r));
    if (output == nullptr && element_count(r) > 0) {
      return Status(HVD_ERR_INVALID_ARGUMENT, "output is NULL");
    }
    hvd_op_args_t a;
    HVDC_RETURN_IF_ERROR(hvdc::api::read_op_args(args, &a));
    HVDC_RETURN_IF_ERROR(set_name(engine, name, OpType::kBroadcast, &r));
    return submit(engine, std::move(r), input->data, output, a, handle);
  });
}

hvd_status_t hvd_barrier_async(const char* name, const hvd_op_args_t* args, hvd_handle_t* handle) {
  return guarded([&] {
    if (handle == nullptr) return Status(HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
    Engine* engine = nullptr;
    HVDC_RETURN_IF_ERROR(current_engine(&engine));
    Request r;
    r.op_type = OpType::kBarrier;
    r.dtype = HVD_UINT8;
    hvd_op_args_t a;
    HVDC_RETURN_IF_ERROR(hvdc::api::read_op_args(args, &a));
    HVDC_RETURN_IF_ERROR(set_name(engine, name, OpType::kBarrier, &r));
    return submit(engine, std::move(r), nullptr, nullptr, a, handle);
  });
}

}  // extern "C"
