// The host path for device tensors (HVD_OP_HOST_PATH, Horovod's device_dense='/cpu:0'), also
// taken when NCCL cannot serve an op: several members on one GPU, or a reduction NCCL has no
// exact form of (int16/uint16, bool, integer AVERAGE). The inputs are copied into pinned host
// memory on the op's stream, the host backend runs the collective there (its algorithms, its
// exact integer average, its scale factors), and the results are copied back on the stream.
#pragma once

#include "ops/backend.h"
#include "ops/cpu/backend.h"
#include "ops/nccl/device_run.h"

namespace hvdc::ops::nccl {

class HostPath {
 public:
  explicit HostPath(const BackendOptions& options) : host_(options) {}
  // Runs op (the stream already waits for the callers' inputs); returns once the copies back
  // are queued. Blocks while the copies to the host run (the collective needs them).
  Status run(const CollectiveArgs& op, DeviceRun& run);

 private:
  cpu::CpuBackend host_;
};

}  // namespace hvdc::ops::nccl
