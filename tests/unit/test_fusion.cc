// Fusion grouping, the response cache's bookkeeping, and how fused views are cut into segments.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "core/fusion.h"
#include "core/response_cache.h"
#include "hvdc.h"
#include "ops/cpu/pieces.h"
#include "ops/cpu/segments.h"

namespace {

using hvdc::core::fuse_responses;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc::core::Response;
using hvdc::core::ResponseCache;
using hvdc::core::ResponseKind;
using hvdc::core::set_bit;
using hvdc::core::test_bit;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::Segment;
using hvdc::ops::cpu::SegmentLimits;
using hvdc::ops::cpu::split_segments;

Response allreduce(const std::string& name, int64_t count, int32_t dtype = HVD_FLOAT32,
                   int32_t op = HVD_OP_SUM) {
  Response r;
  r.op_type = OpType::kAllreduce;
  r.names = {name};
  r.counts = {count};
  r.dtype = dtype;
  r.reduce_op = op;
  return r;
}

std::vector<std::vector<std::string>> names_of(const std::vector<Response>& list) {
  std::vector<std::vector<std::string>> out;
  for (const Response& r : list) out.push_back(r.names);
  return out;
}

TEST(Fusion, CompatibleResponsesFuseWithLookAheadWithinThreshold) {
  std::vector<Response> in = {allreduce("a", 100), allreduce("b", 10, HVD_INT32),
                              allreduce("c", 100), allreduce("d", 100, HVD_FLOAT32, HVD_OP_MAX),
                              allreduce("e", 100)};
  in[2].prescale = 1.0;
  const auto out = fuse_responses(in, 1 << 20);
  EXPECT_EQ(names_of(out), (std::vector<std::vector<std::string>>{{"a", "c", "e"}, {"b"}, {"d"}}));
  EXPECT_EQ(out[0].counts, (std::vector<int64_t>{100, 100, 100}));
}

TEST(Fusion, ThresholdBoundsTheFusedSizeAndZeroDisables) {
  std::vector<Response> in = {allreduce("a", 100), allreduce("b", 100), allreduce("c", 100)};
  EXPECT_EQ(fuse_responses(in, 800).size(), 2u);  // 400 + 400 bytes fit, the third does not
  EXPECT_EQ(fuse_responses(in, 0).size(), 3u);
  EXPECT_EQ(fuse_responses(in, 1200).size(), 1u);
}

TEST(Fusion, ErrorsScalesAndOtherOpsNeverFuse) {
  std::vector<Response> in = {allreduce("a", 1), allreduce("b", 1), allreduce("c", 1),
                              allreduce("d", 1)};
  in[1].kind = ResponseKind::kError;
  in[2].postscale = 0.5;
  in[3].op_type = OpType::kBroadcast;
  EXPECT_EQ(fuse_responses(in, 1 << 20).size(), 4u);
}

// Tensors on different devices (or device kinds) share no buffer and no stream: never one
// collective.
TEST(Fusion, DifferentDevicesNeverFuse) {
  std::vector<Response> in = {allreduce("a", 1), allreduce("b", 1), allreduce("c", 1),
                              allreduce("d", 1)};
  for (Response& r : in) r.device_type = HVD_DEVICE_CUDA;
  in[1].device_id = 1;
  in[3].device_type = HVD_DEVICE_CPU;
  EXPECT_FALSE(hvdc::core::fusable(in[0], in[1]));
  EXPECT_TRUE(hvdc::core::fusable(in[0], in[2]));
  EXPECT_EQ(names_of(fuse_responses(in, 1 << 20)),
            (std::vector<std::vector<std::string>>{{"a", "c"}, {"b"}, {"d"}}));
}

// Ranks in different sets see different lists; a set's groups, and their relative order, must
// not depend on the other sets' responses between them (the engine's execution order relies on
// it).
TEST(Fusion, ProcessSetsNeverFuseAndGroupIndependently) {
  std::vector<Response> in = {allreduce("a", 1), allreduce("x", 1), allreduce("b", 1),
                              allreduce("y", 1), allreduce("c", 1)};
  in[1].process_set = 3;
  in[3].process_set = 3;
  const auto out = fuse_responses(in, 8);
  EXPECT_EQ(names_of(out), (std::vector<std::vector<std::string>>{{"a", "b"}, {"x", "y"}, {"c"}}));
  EXPECT_EQ(out[1].process_set, 3);
  std::vector<Response> global_only = {in[0], in[2], in[4]};
  EXPECT_EQ(names_of(fuse_responses(global_only, 8)),
            (std::vector<std::vector<std::string>>{{"a", "b"}, {"c"}}));
}

Request request_for(const Response& r) {
  Request q;
  q.name = r.names[0];
  q.op_type = r.op_type;
  q.dtype = r.dtype;
  q.reduce_op = r.reduce_op;
  q.shape = {r.counts[0]};
  return q;
}

TEST(ResponseCache, HitInvalidMissAndLruEviction) {
  ResponseCache cache(2);
  uint32_t slot = 99;
  Request a = request_for(allreduce("a", 4));
  EXPECT_EQ(cache.lookup(a, &slot), ResponseCache::Lookup::kMiss);
  EXPECT_TRUE(cache.put(allreduce("a", 4), a));
  EXPECT_TRUE(cache.put(allreduce("b", 4), request_for(allreduce("b", 4))));
  EXPECT_EQ(cache.lookup(a, &slot), ResponseCache::Lookup::kHit);
  EXPECT_EQ(slot, 0u);
  Request changed = a;
  changed.shape = {5};
  EXPECT_EQ(cache.lookup(changed, &slot), ResponseCache::Lookup::kInvalid);
  cache.touch(0);  // a is now the most recently used: c evicts b
  EXPECT_FALSE(cache.put(allreduce("c", 4), request_for(allreduce("c", 4))));
  EXPECT_EQ(cache.lookup(request_for(allreduce("b", 4)), &slot), ResponseCache::Lookup::kMiss);
  EXPECT_EQ(cache.lookup(request_for(allreduce("c", 4)), &slot), ResponseCache::Lookup::kHit);
  EXPECT_EQ(slot, 1u);  // b's slot, the lowest free one
  cache.erase(0);
  EXPECT_EQ(cache.lookup(a, &slot), ResponseCache::Lookup::kMiss);
  EXPECT_EQ(cache.size(), 1u);
}

// A loop over more tensors than the cache holds keeps all but one of them from pass to pass
// (common/replacement.h), where evicting the least recently used alone missed on every one.
TEST(ResponseCache, ALoopOverMoreTensorsThanItHoldsKeepsAllButOne) {
  ResponseCache cache(8);
  int hits = 0, evictions = 0;
  for (int pass = 0; pass < 4; ++pass) {
    hits = 0;
    for (int t = 0; t < 12; ++t) {
      const Response r = allreduce("t" + std::to_string(t), 4);
      uint32_t slot = 99;
      if (cache.lookup(request_for(r), &slot) == ResponseCache::Lookup::kHit) {
        cache.touch(slot);
        ++hits;
      } else {
        evictions += !cache.put(r, request_for(r));
      }
    }
  }
  EXPECT_EQ(hits, 7);
  EXPECT_EQ(evictions, 4 + 3 * 5);  // the first pass's last four, then five a pass
  EXPECT_EQ(cache.size(), 8u);
}

// A round's bit vectors cover the slots ever used, not the whole capacity; a bit past them
// grows the vector rather than writing out of it.
TEST(ResponseCache, WordsInUseFollowTheHighestSlotEverUsed) {
  ResponseCache cache(200);
  EXPECT_EQ(cache.words(), 4u);
  EXPECT_EQ(cache.words_in_use(), 0u);
  for (int i = 0; i < 65; ++i) {
    const std::string name = "t" + std::to_string(i);
    ASSERT_TRUE(cache.put(allreduce(name, 4), request_for(allreduce(name, 4))));
  }
  EXPECT_EQ(cache.words_in_use(), 2u);  // slots 0..64
  cache.erase(64);
  EXPECT_EQ(cache.words_in_use(), 2u);  // a bit of slot 64 may still be in flight elsewhere
  std::vector<uint64_t> bits(cache.words_in_use(), 0);
  set_bit(bits, 150);
  ASSERT_EQ(bits.size(), 3u);
  EXPECT_TRUE(test_bit(bits, 150));
  EXPECT_FALSE(test_bit(bits, 64));
}

TEST(ResponseCache, OnlySuccessfulAllreduceAndAllgatherAreCacheable) {
  Response r = allreduce("a", 1);
  EXPECT_TRUE(ResponseCache::cacheable(r));
  r.op_type = OpType::kAllgather;
  EXPECT_TRUE(ResponseCache::cacheable(r));
  r.op_type = OpType::kBroadcast;
  EXPECT_FALSE(ResponseCache::cacheable(r));
  r = allreduce("a", 1);
  r.kind = ResponseKind::kError;
  EXPECT_FALSE(ResponseCache::cacheable(r));
  ResponseCache disabled(0);
  uint32_t slot = 0;
  EXPECT_TRUE(disabled.put(allreduce("a", 1), request_for(allreduce("a", 1))));
  EXPECT_EQ(disabled.lookup(request_for(allreduce("a", 1)), &slot), ResponseCache::Lookup::kMiss);
  EXPECT_EQ(disabled.words(), 0u);
}

// Segments cover the range exactly, in order, within the limits; in-place segments point into
// the right piece; short runs are packed together.
TEST(Segments, CoverTheRangeAndPackShortRuns) {
  std::vector<std::vector<char>> bufs;
  for (size_t bytes : {64u, 8u, 8u, 4096u, 0u, 12u, 20000u, 4u}) bufs.emplace_back(bytes);
  std::vector<hvdc::ops::cpu::Piece> pieces;
  for (auto& b : bufs) pieces.push_back({b.data(), b.size()});
  const Pieces view(pieces);
  ASSERT_EQ(view.bytes(), 64u + 8 + 8 + 4096 + 12 + 20000 + 4);
  const SegmentLimits limits{1024, 1024, 256};
  for (size_t offset : {0u, 4u, 60u, 5000u}) {
    const size_t len = view.bytes() - offset;
    std::vector<Segment> segs = split_segments(view, offset, len, limits);
    size_t at = offset;
    for (const Segment& s : segs) {
      EXPECT_EQ(s.offset, at);
      EXPECT_LE(s.bytes, 1024u);
      EXPECT_GT(s.bytes, 0u);
      if (!s.staged) {
        EXPECT_EQ(s.addr, view.contiguous(s.offset, s.bytes));
      }
      at += s.bytes;
    }
    EXPECT_EQ(at, offset + len);
  }
  std::vector<Segment> segs = split_segments(view, 0, 64 + 8 + 8, limits);
  ASSERT_EQ(segs.size(), 1u);  // three short runs, one packed block
  EXPECT_TRUE(segs[0].staged);
}

TEST(Pieces, GatherAndScatterRoundTrip) {
  std::vector<char> a(5), b(0), c(7);
  const Pieces view({{a.data(), a.size()}, {b.data(), 0}, {c.data(), c.size()}});
  EXPECT_EQ(view.count(), 2u);
  std::vector<char> src(12);
  std::iota(src.begin(), src.end(), 1);
  view.scatter(0, 12, src.data());
  EXPECT_EQ(a[4], 5);
  EXPECT_EQ(c[0], 6);
  std::vector<char> back(8);
  view.gather(3, 8, back.data());
  EXPECT_EQ(0, std::memcmp(back.data(), src.data() + 3, 8));
  EXPECT_EQ(view.contiguous(5, 7), c.data());
  EXPECT_EQ(view.contiguous(4, 2), nullptr);
}

}  // namespace
