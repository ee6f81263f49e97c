#include "ops/nccl/host_path.h"

#include <memory>
#include <utility>
#include <vector>

#include "common/dtype.h"
#include "ops/nccl/device_context.h"

namespace hvdc::ops::nccl {

namespace {

// A host buffer whose contents go to device memory once the host collective ran.
struct CopyBack {
  void* device = nullptr;
  const void* host = nullptr;
  size_t bytes = 0;
};
using CopyBacks = std::shared_ptr<std::vector<CopyBack>>;

size_t input_bytes(const CollectiveArgs& op, const TensorArgs& t) {
  const size_t count = op.type == Collective::kAllreduce ? static_cast<size_t>(t.count)
                                                         : cpu::element_count(t.shape);
  return count * common::dtype_size(op.dtype);
}

// Outputs sized only now (allgather, alltoall): the caller's device output, and a host buffer
// for the host collective that is copied there afterwards.
std::function<void*(const std::vector<int64_t>&, size_t)> staged_allocator(const TensorArgs& t,
                                                                           DeviceRun& run,
                                                                           CopyBacks backs) {
  auto allocate = t.allocate_output;
  return [allocate, &run, backs](const std::vector<int64_t>& shape, size_t bytes) -> void* {
    void* device = allocate(shape, bytes);
    void* host = nullptr;
    if ((device == nullptr && bytes > 0) || !run.host_buffer(bytes, &host).is_ok()) return nullptr;
    backs->push_back({device, host, bytes});
    return host;
  };
}

// Points the host copy `h` of tensor `t` at pinned buffers, queuing the copy of its input.
Status stage_tensor(const CollectiveArgs& op, const TensorArgs& t, DeviceRun& run,
                    const CopyBacks& backs, TensorArgs* h) {
  const size_t bytes = input_bytes(op, t);
  void* in = nullptr;
  HVDC_RETURN_IF_ERROR(run.host_buffer(bytes, &in));
  const bool root = op.group.index == op.root;
  const bool reads = t.input != nullptr && (op.type != Collective::kBroadcast || root);
  if (reads && bytes > 0)
    HVDC_RETURN_IF_ERROR(run.rt().copy_async(in, t.input, bytes, run.stream()));
  h->input = t.input != nullptr ? in : nullptr;
  switch (op.type) {
    case Collective::kAllreduce:
    case Collective::kBroadcast:
      h->output = t.output != nullptr ? in : nullptr;
      if (t.output != nullptr) backs->push_back({t.output, in, bytes});
      return Status::ok();
    case Collective::kReducescatter: {
      const auto rows = cpu::even_split(t.shape.empty() ? 0 : t.shape[0], op.group.size());
      const size_t out_bytes = static_cast<size_t>(rows[op.group.index]) *
                               cpu::element_count(t.shape, 1) * common::dtype_size(op.dtype);
      void* out = nullptr;
      HVDC_RETURN_IF_ERROR(run.host_buffer(out_bytes, &out));
      h->output = out;
      backs->push_back({t.output, out, out_bytes});
      return Status::ok();
    }
    default:  // allgather, alltoall
      h->allocate_output = staged_allocator(t, run, backs);
      return Status::ok();
  }
}

}  // namespace

Status HostPath::run(const CollectiveArgs& op, DeviceRun& run) {
  CollectiveArgs host = op;
  auto backs = std::make_shared<std::vector<CopyBack>>();
  for (size_t i = 0; i < op.tensors.size(); ++i) {
    HVDC_RETURN_IF_ERROR(stage_tensor(op, op.tensors[i], run, backs, &host.tensors[i]));
  }
  device::Event copied;
  HVDC_RETURN_IF_ERROR(run.dev->acquire_event(&copied));
  Status st = run.rt().event_record(copied, run.stream());
  if (st.is_ok()) st = wait_event(run.dev->runtime(), copied, op.group.interrupt);
  run.dev->release_event(copied);
  HVDC_RETURN_IF_ERROR(st.with_context("copying device tensors to the host"));
  std::unique_ptr<PendingCollective> none;
  HVDC_RETURN_IF_ERROR(host_.start(host, &none));
  for (const CopyBack& back : *backs) {
    if (back.bytes == 0) continue;
    HVDC_RETURN_IF_ERROR(run.rt().copy_async(back.device, back.host, back.bytes, run.stream()));
  }
  return Status::ok();
}

}  // namespace hvdc::ops::nccl
