// Where each tensor of a fused allreduce lies in the device fusion buffer, and the batched copies
// that fill it (inputs times the prescale factor) and empty it (results times the postscale
// factor): one launch each way, whatever the number of tensors.
#pragma once

#include <cstddef>
#include <vector>

#include "device/runtime.h"
#include "ops/backend.h"

namespace hvdc::ops::nccl {

// Offsets in elements; every tensor starts on a kAlignBytes boundary (the copy kernel and NCCL
// move whole aligned words). The gaps are reduced too, and never read back.
struct FusionLayout {
  static constexpr size_t kAlignBytes = 256;
  std::vector<size_t> offsets;  // per tensor
  size_t total = 0;             // elements, gaps included
};

FusionLayout plan_fusion(const std::vector<TensorArgs>& tensors, size_t esize);

// Inputs into the buffer. A joined rank's tensor (no input) is not copied: zero it separately.
std::vector<device::CopyPiece> pack_pieces(const std::vector<TensorArgs>& tensors,
                                           const FusionLayout& layout, void* buffer, size_t esize);
// The buffer out into the outputs (tensors without one are skipped).
std::vector<device::CopyPiece> unpack_pieces(const std::vector<TensorArgs>& tensors,
                                             const FusionLayout& layout, const void* buffer,
                                             size_t esize);

// Reducescatter over uneven blocks: block m (counts[m] elements, consecutive in `input`) is
// copied to `padded` at m * stride elements, so that every member's block has stride elements.
std::vector<device::CopyPiece> pad_pieces(const void* input, const std::vector<size_t>& counts,
                                          size_t stride, void* padded, size_t esize);

}  // namespace hvdc::ops::nccl
