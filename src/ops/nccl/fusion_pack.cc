#include "ops/nccl/fusion_pack.h"

namespace hvdc::ops::nccl {

FusionLayout plan_fusion(const std::vector<TensorArgs>& tensors, size_t esize) {
  FusionLayout layout;
  const size_t align = FusionLayout::kAlignBytes / esize;
  size_t at = 0;
  for (const TensorArgs& tensor : tensors) {
    layout.offsets.push_back(at);
    at += static_cast<size_t>(tensor.count);
    at = (at + align - 1) / align * align;
  }
  layout.total = at;
  return layout;
}

std::vector<device::CopyPiece> pack_pieces(const std::vector<TensorArgs>& tensors,
                                           const FusionLayout& layout, void* buffer, size_t esize) {
  std::vector<device::CopyPiece> pieces;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].input == nullptr || tensors[i].count == 0) continue;
    pieces.push_back({tensors[i].input, static_cast<char*>(buffer) + layout.offsets[i] * esize,
                      static_cast<size_t>(tensors[i].count)});
  }
  return pieces;
}

std::vector<device::CopyPiece> unpack_pieces(const std::vector<TensorArgs>& tensors,
                                             const FusionLayout& layout, const void* buffer,
                                             size_t esize) {
  std::vector<device::CopyPiece> pieces;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].output == nullptr || tensors[i].count == 0) continue;
    pieces.push_back({static_cast<const char*>(buffer) + layout.offsets[i] * esize,
                      tensors[i].output, static_cast<size_t>(tensors[i].count)});
  }
  return pieces;
}

std::vector<device::CopyPiece> pad_pieces(const void* input, const std::vector<size_t>& counts,
                                          size_t stride, void* padded, size_t esize) {
  std::vector<device::CopyPiece> pieces;
  size_t from = 0;
  for (size_t m = 0; m < counts.size(); ++m) {
    if (counts[m] > 0) {
      pieces.push_back({static_cast<const char*>(input) + from * esize,
                        static_cast<char*>(padded) + m * stride * esize, counts[m]});
    }
    from += counts[m];
  }
  return pieces;
}

}  // namespace hvdc::ops::nccl
