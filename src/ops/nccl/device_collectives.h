// The collectives on device memory through NCCL, queued on the op's stream (DeviceRun). Each
// returns once its work is queued; the backend then records completion.
#pragma once

#include "ops/backend.h"
#include "ops/nccl/device_run.h"

namespace hvdc::ops::nccl {

// True when NCCL reduces dtype with op exactly as hvdc defines it. Not: int16/uint16 and bool
// (no NCCL type), and integer AVERAGE (hvdc's is exact: the host path's wide lanes).
bool reduces_on_nccl(int32_t dtype, int32_t reduce_op);

// allreduce.cc: one tensor in place (prescale by a scaled copy, postscale in place), or several
// through the fusion buffer with the scale factors fused into the copies.
Status allreduce_on_device(const CollectiveArgs& op, DeviceRun& run);
// exchange_collectives.cc
Status allgather_on_device(const CollectiveArgs& op, DeviceRun& run);
Status broadcast_on_device(const CollectiveArgs& op, DeviceRun& run);
Status alltoall_on_device(const CollectiveArgs& op, DeviceRun& run);
Status reducescatter_on_device(const CollectiveArgs& op, DeviceRun& run);

}  // namespace hvdc::ops::nccl
