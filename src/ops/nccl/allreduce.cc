// Allreduce on the device. NCCL reduces in place; the scale factors ride on copies the op makes
// anyway where it can (the fusion buffer's), and cost one extra pass otherwise.
#include "common/dtype.h"
#include "ops/nccl/device_collectives.h"
#include "ops/nccl/fusion_pack.h"

namespace hvdc::ops::nccl {

namespace {

Status allreduce_single(const CollectiveArgs& op, DeviceRun& run) {
  const TensorArgs& t = op.tensors[0];
  device::Runtime& rt = run.rt();
  const size_t count = static_cast<size_t>(t.count);
  const void* src = t.input;
  if (op.prescale != 1.0 && count > 0) {
    const device::CopyPiece piece{t.input, t.output, count};
    HVDC_RETURN_IF_ERROR(rt.batched_copy(&piece, 1, op.dtype, op.prescale, run.stream()));
    src = t.output;
  }
  HVDC_RETURN_IF_ERROR(
      rt.allreduce(src, t.output, count, op.dtype, op.reduce_op, run.comm, run.stream()));
  if (op.postscale == 1.0 || count == 0) return Status::ok();
  return rt.scale_in_place(t.output, count, op.dtype, op.postscale, run.stream());
}

// One batched copy in, one allreduce over the whole buffer, one batched copy out.
Status allreduce_fused(const CollectiveArgs& op, DeviceRun& run) {
  device::Runtime& rt = run.rt();
  const size_t esize = common::dtype_size(op.dtype);
  const FusionLayout layout = plan_fusion(op.tensors, esize);
  void* buffer = nullptr;
  HVDC_RETURN_IF_ERROR(run.device_buffer(layout.total * esize, &buffer));
  for (size_t i = 0; i < op.tensors.size(); ++i) {
    if (op.tensors[i].input != nullptr) continue;  // a joined rank contributes zeros
    char* at = static_cast<char*>(buffer) + layout.offsets[i] * esize;
    HVDC_RETURN_IF_ERROR(run.zeros(at, static_cast<size_t>(op.tensors[i].count) * esize));
  }
  const auto in = pack_pieces(op.tensors, layout, buffer, esize);
  if (!in.empty()) {
    HVDC_RETURN_IF_ERROR(
        rt.batched_copy(in.data(), in.size(), op.dtype, op.prescale, run.stream()));
  }
  HVDC_RETURN_IF_ERROR(
      rt.allreduce(buffer, buffer, layout.total, op.dtype, op.reduce_op, run.comm, run.stream()));
  const auto out = unpack_pieces(op.tensors, layout, buffer, esize);
  if (out.empty()) return Status::ok();
  return rt.batched_copy(out.data(), out.size(), op.dtype, op.postscale, run.stream());
}

}  // namespace

bool reduces_on_nccl(int32_t dtype, int32_t reduce_op) {
  switch (dtype) {
    case HVD_INT8:
    case HVD_UINT8:
    case HVD_INT32:
    case HVD_INT64:
      return reduce_op != HVD_OP_AVERAGE;
    case HVD_FLOAT16:
    case HVD_BFLOAT16:
    case HVD_FLOAT32:
    case HVD_FLOAT64:
      return true;
    default:
      return false;
  }
}

Status allreduce_on_device(const CollectiveArgs& op, DeviceRun& run) {
  const bool single = op.tensors.size() == 1 && op.tensors[0].input != nullptr;
  return single ? allreduce_single(op, run) : allreduce_fused(op, run);
}

}  // namespace hvdc::ops::nccl
