// OutputReuse (src/ops/cpu/local/output_reuse.h): an output is cold only once it was written
// before and at least the threshold of other outputs were written since; most of a fused
// output's bytes decide; the record stays bounded; and the last-level cache size reads.
#include <gtest/gtest.h>

#include <vector>

#include "ops/cpu/local/output_reuse.h"

namespace {

using hvdc::ops::cpu::Piece;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::local::last_level_cache_bytes;
using hvdc::ops::cpu::local::OutputReuse;

char g_area[1 << 16];

Pieces at(size_t offset, size_t bytes) {
  return Pieces(g_area + offset, bytes);
}

TEST(OutputReuse, AnOutputIsColdOnlyOnceEnoughOthersWereWrittenAfterIt) {
  OutputReuse reuse(1000);
  const Pieces a = at(0, 600), b = at(1000, 300), c = at(2000, 800);
  EXPECT_FALSE(reuse.cold(a)) << "never written: nothing is known of it";
  reuse.written(a);
  EXPECT_FALSE(reuse.cold(a)) << "nothing written after it";
  reuse.written(b);
  EXPECT_FALSE(reuse.cold(a)) << "300 bytes after it, under 1000";
  reuse.written(c);
  EXPECT_TRUE(reuse.cold(a)) << "1100 bytes after it";
  EXPECT_FALSE(reuse.cold(b)) << "800 bytes after it";
  EXPECT_FALSE(reuse.cold(c));
  reuse.written(a);
  EXPECT_FALSE(reuse.cold(a)) << "written again: hot";
  EXPECT_TRUE(reuse.cold(b)) << "1400 bytes after it";
}

TEST(OutputReuse, MostOfAFusedOutputsBytesDecide) {
  OutputReuse reuse(100);
  const Pieces big = at(0, 800), small = at(1000, 100), other = at(2000, 400);
  reuse.written(big);
  reuse.written(small);
  reuse.written(other);
  reuse.written(small);  // big: 500 bytes after it, cold; small: none, hot
  EXPECT_TRUE(reuse.cold(Pieces(std::vector<Piece>{{g_area, 800}, {g_area + 1000, 100}})));
  EXPECT_FALSE(reuse.cold(Pieces(std::vector<Piece>{{g_area + 1000, 100}, {g_area + 4000, 800}})))
      << "800 of its 900 bytes were never written";
  EXPECT_FALSE(reuse.cold(Pieces(std::vector<Piece>{{g_area, 800}, {g_area + 4000, 900}})))
      << "the cold piece is under half the bytes";
}

TEST(OutputReuse, ZeroCountsEveryOutputAsCold) {
  OutputReuse reuse(0);
  EXPECT_TRUE(reuse.cold(at(0, 64)));
  reuse.set_cold_bytes(64);
  EXPECT_FALSE(reuse.cold(at(0, 64)));
}

TEST(OutputReuse, TheRecordStaysBounded) {
  OutputReuse reuse(1);
  for (size_t i = 0; i < OutputReuse::kMaxTracked + 10; ++i) reuse.written(at(i, 1));
  EXPECT_GT(reuse.tracked(), 0u);
  EXPECT_LE(reuse.tracked(), OutputReuse::kMaxTracked);
  EXPECT_TRUE(reuse.cold(at(OutputReuse::kMaxTracked + 8, 1))) << "kept after the restart";
  EXPECT_FALSE(reuse.cold(at(0, 1))) << "forgotten at the restart";
}

TEST(OutputReuse, TheLastLevelCacheSizeIsRead) {
  const size_t bytes = last_level_cache_bytes();
  EXPECT_GE(bytes, size_t{64} << 10);
  EXPECT_LE(bytes, size_t{4} << 30);
}

}  // namespace
