#include "api/validate.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/dtype.h"
#include "common/utf8.h"
#include "device/plugin_loader.h"
#include "ops/nccl/submission.h"

namespace hvdc::api {

using common::make_error;

Status check_tensor(const hvd_tensor_t* tensor, const char* arg, core::Request* out) {
  if (tensor == nullptr) return make_error(HVD_ERR_INVALID_ARGUMENT, "%s is NULL", arg);
  if (!common::dtype_valid(tensor->dtype)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s->dtype %d is not a valid hvdc dtype", arg,
                      tensor->dtype);
  }
  if (tensor->ndim < 0 || tensor->ndim > HVD_MAX_NDIM) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s->ndim %d is outside [0, %d]", arg, tensor->ndim,
                      HVD_MAX_NDIM);
  }
  if (tensor->ndim > 0 && tensor->shape == nullptr) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s->shape is NULL with ndim %d", arg,
                      tensor->ndim);
  }
  if (tensor->device.type != HVD_DEVICE_CPU && tensor->device.type != HVD_DEVICE_CUDA) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "%s->device.type %d is neither CPU (1) nor CUDA (2)", arg,
                      tensor->device.type);
  }
  const size_t element_size = common::dtype_size(tensor->dtype);
  const uint64_t limit = std::numeric_limits<int64_t>::max() / element_size;
  uint64_t count = 1;
  // Zero dims are left out of the bound: the other dims still size rows (allgather, alltoall),
  // so their product must fit even when the tensor is empty.
  uint64_t nonzero = 1;
  out->shape.assign(tensor->shape, tensor->shape + tensor->ndim);
  for (int i = 0; i < tensor->ndim; ++i) {
    const int64_t d = tensor->shape[i];
    if (d < 0) {
      return make_error(HVD_ERR_INVALID_ARGUMENT, "%s->shape[%d] is negative (%lld)", arg, i,
                        static_cast<long long>(d));
    }
    if (d != 0 && nonzero > limit / static_cast<uint64_t>(d)) {
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "%s->shape[%d] = %lld makes the size overflow: more than INT64_MAX bytes "
                        "of %zu-byte elements",
                        arg, i, static_cast<long long>(d), element_size);
    }
    if (d != 0) nonzero *= static_cast<uint64_t>(d);
    count *= static_cast<uint64_t>(d);
  }
  if (count > 0 && tensor->data == nullptr) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "%s->data is NULL for %llu elements", arg,
                      static_cast<unsigned long long>(count));
  }
  out->dtype = tensor->dtype;
  out->device_type = tensor->device.type;
  out->device_id = tensor->device.id;
  return Status::ok();
}

Status read_op_args(const hvd_op_args_t* args, hvd_op_args_t* out) {
  hvd_op_args_init(out, sizeof(*out));
  if (args == nullptr) return Status::ok();
  const size_t minimum = offsetof(hvd_op_args_t, process_set) + sizeof(int32_t);
  if (args->struct_size < minimum) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "args->struct_size %u is too small; call hvd_op_args_init first",
                      args->struct_size);
  }
  std::memcpy(out, args, std::min<size_t>(args->struct_size, sizeof(*out)));
  out->struct_size = sizeof(*out);
  if (!std::isfinite(out->prescale_factor)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "args->prescale_factor %g is not finite",
                      out->prescale_factor);
  }
  if (!std::isfinite(out->postscale_factor)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "args->postscale_factor %g is not finite",
                      out->postscale_factor);
  }
  const uint32_t known = HVD_OP_STREAM_ORDERED | HVD_OP_HOST_PATH;
  if ((out->flags & ~known) != 0) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "args->flags 0x%x has unknown bits 0x%x (known: HVD_OP_STREAM_ORDERED = 1, "
                      "HVD_OP_HOST_PATH = 2)",
                      out->flags, out->flags & ~known);
  }
  return Status::ok();
}

Status apply_device_args(const hvd_op_args_t& args, core::Request* request,
                         core::TensorEntry* entry) {
  if (request->device_type != HVD_DEVICE_CUDA) return Status::ok();
  request->flags = args.flags & core::kNegotiatedFlags;
  entry->cuda_stream = args.cuda_stream;
  entry->stream_ordered = (args.flags & HVD_OP_STREAM_ORDERED) != 0;
  device::Runtime* runtime = nullptr;
  if (!device::cuda_runtime(&runtime).is_ok()) return Status::ok();
  return ops::nccl::record_submission(runtime, request->device_id, args.cuda_stream,
                                      entry->stream_ordered, &entry->submission);
}

Status check_name(const char* name) {
  const size_t len = std::strlen(name);
  if (len == 0) return Status(HVD_ERR_INVALID_ARGUMENT, "name is empty; pass NULL for automatic");
  if (len > core::kMaxNameLength) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "name is %zu bytes long; the limit is %zu", len,
                      core::kMaxNameLength);
  }
  // Names travel to other ranks and into logs and the JSON timeline, which need text.
  const size_t bad = common::first_invalid_utf8(std::string_view(name, len));
  if (bad < len) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "name is not valid UTF-8: byte 0x%02X at offset %zu",
                      static_cast<unsigned char>(name[bad]), bad);
  }
  return Status::ok();
}

Status check_reduce_op(int32_t reduce_op, int32_t dtype) {
  if (!common::reduce_op_valid(reduce_op)) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "reduce_op %d is not a valid hvdc reduce op",
                      reduce_op);
  }
  if (dtype == HVD_BOOL && reduce_op == HVD_OP_AVERAGE) {
    return Status(HVD_ERR_INVALID_ARGUMENT, "reduce_op average is not defined for bool tensors");
  }
  return Status::ok();
}

Status member_process_set(const core::ProcessSetTable& table, int32_t id, int my_rank,
                          std::shared_ptr<const core::ProcessSetInfo>* out) {
  std::shared_ptr<const core::ProcessSetInfo> set = table.lookup(id);
  if (set == nullptr) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "args->process_set: process set %d does not exist",
                      id);
  }
  if (set->index < 0) {
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "args->process_set: rank %d is not a member of %s; only members may call "
                      "its collectives",
                      my_rank, core::describe_process_set(id, set->ranks).c_str());
  }
  *out = std::move(set);
  return Status::ok();
}

}  // namespace hvdc::api
