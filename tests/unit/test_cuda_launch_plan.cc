// The batched copy kernel's host-side launch arithmetic (src/device/cuda/launch_plan.h), checked
// without CUDA: every word of every piece is covered by exactly one block's chunks, and the
// block-to-piece search agrees with a linear scan.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "device/cuda/launch_plan.h"

namespace hvdc::device::cuda {
namespace {

// The words block `b` of a piece that owns `blocks` blocks touches, as the kernel walks them.
uint64_t words_of_block(uint64_t words, uint64_t blocks, uint64_t b) {
  uint64_t total = 0;
  for (uint64_t chunk = b * kWordsPerChunk; chunk < words; chunk += blocks * kWordsPerChunk) {
    total += std::min<uint64_t>(kWordsPerChunk, words - chunk);
  }
  return total;
}

TEST(CudaLaunchPlan, GroupsCoverEveryPieceOnceInLaunchesOfBoundedSize) {
  for (size_t n : {size_t{0}, size_t{1}, kMaxPiecesPerLaunch - 1, kMaxPiecesPerLaunch,
                   kMaxPiecesPerLaunch + 1, 3 * kMaxPiecesPerLaunch + 7}) {
    size_t next = 0;
    for (const LaunchGroup& g : launch_groups(n)) {
      EXPECT_EQ(g.first, next) << n;
      EXPECT_GT(g.count, 0u) << n;
      EXPECT_LE(g.count, kMaxPiecesPerLaunch) << n;
      next += g.count;
    }
    EXPECT_EQ(next, n);
  }
}

TEST(CudaLaunchPlan, GridGivesEachPieceItsChunksAndCapsHugePieces) {
  const uint64_t huge = uint64_t{kMaxBlocksPerPiece} * kWordsPerChunk * 3 + 5;
  const std::vector<uint64_t> words = {0, 1, kWordsPerChunk, kWordsPerChunk + 1, 0, huge, 7, 0};
  const GridPlan plan = plan_grid(words.data(), words.size());
  ASSERT_EQ(plan.first_block.size(), words.size() + 1);
  EXPECT_EQ(plan.first_block.front(), 0u);
  EXPECT_EQ(plan.first_block.back(), plan.blocks);
  const std::vector<uint32_t> expected_blocks = {0, 1, 1, 2, 0, kMaxBlocksPerPiece, 1, 0};
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t blocks = plan.first_block[i + 1] - plan.first_block[i];
    EXPECT_EQ(blocks, expected_blocks[i]) << "piece " << i;
    // The piece's blocks, striding, cover exactly its words.
    uint64_t covered = 0;
    for (uint32_t b = 0; b < blocks; ++b) covered += words_of_block(words[i], blocks, b);
    EXPECT_EQ(covered, words[i]) << "piece " << i;
  }
}

TEST(CudaLaunchPlan, EveryBlockFindsThePieceThatOwnsIt) {
  const std::vector<uint64_t> words = {0, 3 * kWordsPerChunk, 0, 0, 1, kWordsPerChunk * 2 + 1, 0};
  const GridPlan plan = plan_grid(words.data(), words.size());
  const uint32_t n = static_cast<uint32_t>(words.size());
  for (uint32_t block = 0; block < plan.blocks; ++block) {
    uint32_t owner = n;
    for (uint32_t i = 0; i < n; ++i) {
      if (plan.first_block[i] <= block && block < plan.first_block[i + 1]) owner = i;
    }
    ASSERT_LT(owner, n) << "block " << block << " has no piece";
    EXPECT_EQ(piece_of_block(plan.first_block.data(), n, block), owner) << "block " << block;
  }
  EXPECT_EQ(piece_of_block(plan.first_block.data(), 1, 0), 0u);
}

TEST(CudaLaunchPlan, CopyWordIsTheWidestThatDividesEveryAddressAndSize) {
  const uintptr_t aligned[2] = {0x7f0000001000, 0x7f0000002000};
  const uint64_t sizes16[2] = {4096, 160};
  EXPECT_EQ(copy_word_bytes(aligned, 2, sizes16, 2), 16u);
  const uint64_t sizes4[2] = {4096, 12};
  EXPECT_EQ(copy_word_bytes(aligned, 2, sizes4, 2), 4u);
  const uintptr_t offset8[2] = {0x7f0000001008, 0x7f0000002000};
  EXPECT_EQ(copy_word_bytes(offset8, 2, sizes16, 2), 8u);
  const uintptr_t odd[1] = {0x7f0000001001};
  EXPECT_EQ(copy_word_bytes(odd, 1, sizes16, 1), 1u);
  const uint64_t sizes2[1] = {6};
  EXPECT_EQ(copy_word_bytes(aligned, 1, sizes2, 1), 2u);
  EXPECT_EQ(copy_word_bytes(nullptr, 0, nullptr, 0), 16u);  // nothing to copy: any word
}

}  // namespace
}  // namespace hvdc::device::cuda
