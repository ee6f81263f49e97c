// How the batched copy kernel covers its pieces: grid, block and chunk sizes, and which block
// serves which piece. Plain C++ (no CUDA) so the arithmetic is unit tested on every machine;
// copy_kernels.cu only executes a plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

// The kernel runs piece_of_block itself; nvcc sees it as device code too.
#ifdef __CUDACC__
#define HVDC_HOST_DEVICE __host__ __device__
#else
#define HVDC_HOST_DEVICE
#endif

namespace hvdc::device::cuda {

// Threads per block of the copy kernels.
constexpr uint32_t kBlockThreads = 256;
// Pieces one launch carries in its parameters (the descriptors travel by value, so the caller's
// array may go away once the launch returns). A batch of more pieces takes several launches.
constexpr size_t kMaxPiecesPerLaunch = 96;
// Words one block moves per chunk: 8 per thread, enough in flight to hide memory latency.
constexpr uint64_t kWordsPerChunk = kBlockThreads * 8;
// Blocks one piece gets at most; each then strides over the piece's further chunks.
constexpr uint32_t kMaxBlocksPerPiece = 4096;

// One launch's worth of pieces, [first, first + count) of the caller's array.
struct LaunchGroup {
  size_t first = 0;
  size_t count = 0;
};
// Splits n pieces into launches of at most kMaxPiecesPerLaunch.
std::vector<LaunchGroup> launch_groups(size_t n);

// The grid of one launch over pieces of words[i] words each: piece i owns the blocks
// [first_block[i], first_block[i + 1]); blocks == first_block.back(). Empty pieces own none.
struct GridPlan {
  std::vector<uint32_t> first_block;  // n + 1 entries
  uint32_t blocks = 0;
};
GridPlan plan_grid(const uint64_t* words, size_t n);

// The piece a block serves: the i with first_block[i] <= block < first_block[i + 1]. An empty
// piece j has first_block[j] == first_block[j + 1], so the largest such i is never empty.
HVDC_HOST_DEVICE inline uint32_t piece_of_block(const uint32_t* first_block, uint32_t n,
                                                uint32_t block) {
  uint32_t lo = 0, hi = n;  // the answer lies in [lo, hi)
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (first_block[mid] <= block) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The widest word a plain copy (scale 1) may move: 16, 8, 4, 2 or 1 bytes, the largest that
// divides every address and byte count of the batch.
uint32_t copy_word_bytes(const uintptr_t* addresses, size_t n_addresses, const uint64_t* bytes,
                         size_t n_bytes);

}  // namespace hvdc::device::cuda
