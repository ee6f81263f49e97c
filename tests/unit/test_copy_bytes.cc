// copy_bytes against a byte-by-byte reference, on both of its paths: the distances modulo 4 KiB
// that take the vector loop (1 to 63) and those that take memcpy, at sizes around the loop's
// 64-byte step and the 2 KiB where it starts, with guard bytes on either side; and move_bytes,
// which falls back to memmove where the ranges overlap.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/copy_bytes.h"

namespace {

using hvdc::common::copy_blocks;
using hvdc::common::copy_bytes;
using hvdc::common::move_bytes;

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

// A source at page offset `src_offset` and a destination `distance` bytes past it modulo 4 KiB.
void check_copy(size_t bytes, size_t src_offset, size_t distance) {
  const size_t span = bytes + 3 * 4096;
  std::vector<uint8_t> src_area(span), dst_area(span + 2 * kGuard, kGuardByte);
  uint8_t* src =
      src_area.data() + (4096 - reinterpret_cast<uintptr_t>(src_area.data()) % 4096) + src_offset;
  uint8_t* page = dst_area.data() + kGuard;
  page += (4096 - reinterpret_cast<uintptr_t>(page) % 4096) % 4096;
  uint8_t* dst = page + (src_offset + distance) % 4096;
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  copy_bytes(dst, src, bytes);
  for (size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(dst[i], src[i]) << "byte " << i << " of " << bytes << ", distance " << distance;
  }
  for (size_t g = 1; g <= kGuard && dst - g >= dst_area.data(); ++g) {
    ASSERT_EQ(*(dst - g), kGuardByte) << "wrote before the destination, distance " << distance;
  }
  for (size_t g = 0; g < kGuard && dst + bytes + g < dst_area.data() + dst_area.size(); ++g) {
    ASSERT_EQ(dst[bytes + g], kGuardByte) << "wrote past the destination, distance " << distance;
  }
}

TEST(CopyBytes, EverySizeAroundTheLoopStepOnBothPaths) {
  for (size_t distance : {0, 1, 8, 15, 16, 31, 63, 64, 100, 4080}) {
    for (size_t bytes : {0, 1, 63, 64, 65, 2047, 2048, 2049, 2111, 4096, 4159, 65536 + 17}) {
      check_copy(bytes, 16, distance);
      check_copy(bytes, 0, distance);
    }
  }
}

TEST(CopyBytes, LargeCopiesFromMallocLikeOffsets) {
  // malloc's large blocks start 16 bytes into a page: the stage-to-heap copy that was slow.
  for (size_t bytes : {131072, 262144 + 4, 1048576}) {
    check_copy(bytes, 0, 16);
    check_copy(bytes, 4080, 16);
  }
}

TEST(CopyBytes, BlocksCopyTailsShorterThanAStep) {
  std::vector<uint8_t> src(200), dst(200, kGuardByte);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i);
  copy_blocks(dst.data() + 1, src.data(), 150);
  EXPECT_EQ(dst[0], kGuardByte);
  for (size_t i = 0; i < 150; ++i) ASSERT_EQ(dst[1 + i], src[i]) << i;
  EXPECT_EQ(dst[151], kGuardByte);
}

TEST(CopyBytes, MoveBytesHandlesOverlapBothWays) {
  for (ptrdiff_t shift : {-4097, -16, -1, 1, 16, 4097}) {
    std::vector<uint8_t> area(20000);
    for (size_t i = 0; i < area.size(); ++i) area[i] = static_cast<uint8_t>(i * 7 + 3);
    const std::vector<uint8_t> before = area;
    const size_t from = 5000, bytes = 9000;
    move_bytes(area.data() + from + shift, area.data() + from, bytes);
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(area[from + shift + i], before[from + i]) << "shift " << shift << ", byte " << i;
    }
  }
}

}  // namespace
