#include "device/cuda/launch_plan.h"

#include <algorithm>

namespace hvdc::device::cuda {

std::vector<LaunchGroup> launch_groups(size_t n) {
  std::vector<LaunchGroup> groups;
  for (size_t first = 0; first < n; first += kMaxPiecesPerLaunch) {
    groups.push_back({first, std::min(kMaxPiecesPerLaunch, n - first)});
  }
  return groups;
}

GridPlan plan_grid(const uint64_t* words, size_t n) {
  GridPlan plan;
  plan.first_block.reserve(n + 1);
  uint32_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    plan.first_block.push_back(next);
    const uint64_t chunks = (words[i] + kWordsPerChunk - 1) / kWordsPerChunk;
    next += static_cast<uint32_t>(std::min<uint64_t>(chunks, kMaxBlocksPerPiece));
  }
  plan.first_block.push_back(next);
  plan.blocks = next;
  return plan;
}

uint32_t copy_word_bytes(const uintptr_t* addresses, size_t n_addresses, const uint64_t* bytes,
                         size_t n_bytes) {
  uint64_t bits = 16;  // OR of everything: its lowest set bit bounds the alignment
  for (size_t i = 0; i < n_addresses; ++i) bits |= addresses[i];
  for (size_t i = 0; i < n_bytes; ++i) bits |= bytes[i];
  return static_cast<uint32_t>(bits & (~bits + 1));
}

}  // namespace hvdc::device::cuda
