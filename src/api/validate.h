// Argument checks for the collective entry points. Each failure names the argument and value.
#pragma once

#include <memory>

#include "common/status.h"
#include "core/message.h"
#include "core/process_set_table.h"
#include "core/tensor_queue.h"
#include "hvdc.h"

namespace hvdc::api {

using common::Status;

// Fills the request's dtype, device and shape from a tensor descriptor, checking each.
Status check_tensor(const hvd_tensor_t* tensor, const char* arg, core::Request* out);
// Copies the fields the caller's struct has; defaults for the rest.
Status read_op_args(const hvd_op_args_t* args, hvd_op_args_t* out);
// Carries the op's device arguments (stream, flags) into its request and queue entry, and for a
// CUDA tensor records its submission on the caller's stream (ops/nccl/submission.h) where the
// CUDA runtime is available (elsewhere the op fails when it runs, on every rank). CPU tensors
// ignore them.
Status apply_device_args(const hvd_op_args_t& args, core::Request* request,
                         core::TensorEntry* entry);
// The explicit name, or an error for an empty, too long or not UTF-8 one.
Status check_name(const char* name);
Status check_reduce_op(int32_t reduce_op, int32_t dtype);
// The set an op runs on: it must exist and this rank must be a member.
Status member_process_set(const core::ProcessSetTable& table, int32_t id, int my_rank,
                          std::shared_ptr<const core::ProcessSetInfo>* out);

}  // namespace hvdc::api
