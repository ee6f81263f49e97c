// allreduce() out of place over views whose pieces are cut differently (the inputs as one tensor
// list, the outputs as another of the same total size), on every transport algorithm, on threads
// acting as ranks over real UCX. The ring reads the inputs where they are; the others copy them
// into the outputs first. Either way the inputs stay untouched, the bytes past every output stay
// untouched, and the results match a sequential reference. Also Pieces::for_each_with and
// copy_to on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hvdc.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/comm.h"
#include "ops/cpu/pieces.h"
#include "ucx_ranks.h"

namespace {

using hvdc::common::Status;
using hvdc::ops::cpu::allreduce;
using hvdc::ops::cpu::Comm;
using hvdc::ops::cpu::Piece;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::ReduceSpec;
using ucx_ranks::first_difference;
using ucx_ranks::run_ranks;

constexpr int32_t kGuard = -7777;  // after every output piece: must survive

// Element i of rank r's input: small integers, so float sums are exact in any order.
int32_t input_value(int rank, size_t i) {
  return static_cast<int32_t>((i * 7 + static_cast<size_t>(rank) * 13) % 97) - 40;
}

// A buffer of `count` elements cut at `cuts` (element offsets), each piece followed by a guard.
struct CutBuffer {
  std::vector<std::vector<int32_t>> parts;  // each ends with one guard element
  std::vector<Piece> pieces() {
    std::vector<Piece> out;
    for (auto& p : parts) {
      out.push_back({reinterpret_cast<char*>(p.data()), (p.size() - 1) * sizeof(int32_t)});
    }
    return out;
  }
  std::vector<int32_t> joined() const {
    std::vector<int32_t> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end() - 1);
    return all;
  }
  bool guards_intact() const {
    for (const auto& p : parts) {
      if (p.back() != kGuard) return false;
    }
    return true;
  }
};

CutBuffer cut(const std::vector<int32_t>& values, const std::vector<size_t>& cuts) {
  CutBuffer b;
  size_t at = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : values.size();
    b.parts.emplace_back(values.begin() + at, values.begin() + end);
    b.parts.back().push_back(kGuard);
    at = end;
  }
  return b;
}

struct ViewCase {
  std::string name;
  int32_t dtype;  // HVD_INT32 or HVD_FLOAT32, both 4 bytes
  int32_t op;
  size_t count;
  size_t small_bytes;  // up to it the direct algorithm runs
  bool deterministic;  // above it: the ring, or the member-ordered algorithm
  // As between hosts over TCP: the ring passes each reduced segment on at once (ring.cc).
  bool pieces_across_hosts = false;
  bool average = false;  // divides by the member count: once per element, whatever the path
  // Below one element (HVDC_SEGMENT_BYTES=3): every path still moves whole elements and ends.
  size_t segment_bytes = 4096;
};

std::vector<ViewCase> view_cases() {
  return {
      {"direct_sum_i32", HVD_INT32, HVD_OP_SUM, 3001, 64 << 10, false},
      {"ring_sum_f32", HVD_FLOAT32, HVD_OP_SUM, 40009, 0, false},
      {"ring_max_i32", HVD_INT32, HVD_OP_MAX, 40009, 0, false},
      {"ring_min_i32_odd", HVD_INT32, HVD_OP_MIN, 5, 0, false},
      {"ordered_sum_f32", HVD_FLOAT32, HVD_OP_SUM, 40009, 0, true},
      {"ring_across_hosts_sum_f32", HVD_FLOAT32, HVD_OP_SUM, 40009, 0, false, true},
      {"ring_across_hosts_average_f32", HVD_FLOAT32, HVD_OP_SUM, 40009, 0, false, true, true},
      {"ring_across_hosts_max_i32_odd", HVD_INT32, HVD_OP_MAX, 7, 0, false, true},
      {"ring_segment_below_element", HVD_FLOAT32, HVD_OP_SUM, 301, 0, false, false, false, 3},
      {"ordered_segment_below_element", HVD_INT32, HVD_OP_SUM, 301, 0, true, false, false, 1},
      {"ring_across_hosts_segment_below_element", HVD_FLOAT32, HVD_OP_SUM, 301, 0, false, true,
       true, 3},
  };
}

int32_t reduce_ref(const ViewCase& c, int n, size_t i) {
  int64_t acc = input_value(0, i);
  for (int r = 1; r < n; ++r) {
    const int64_t v = input_value(r, i);
    acc = c.op == HVD_OP_SUM ? acc + v : c.op == HVD_OP_MAX ? std::max(acc, v) : std::min(acc, v);
  }
  return static_cast<int32_t>(acc);
}

// Values as the dtype stores them: int32 as is, float32 as the float of the same value (divided
// by `divisor`, as the average divides the sum).
std::vector<int32_t> encode(const ViewCase& c, std::vector<int32_t> v, int divisor = 1) {
  if (c.dtype == HVD_FLOAT32) {
    for (int32_t& x : v) {
      const float f = static_cast<float>(x) / static_cast<float>(divisor);
      std::memcpy(&x, &f, sizeof(f));
    }
  }
  return v;
}

struct Outcome {
  std::vector<int32_t> out;
  bool input_untouched = false, guards_intact = false;
};

Status run_case(Comm& comm, const ViewCase& c, Outcome* got) {
  std::vector<int32_t> values(c.count);
  for (size_t i = 0; i < c.count; ++i) values[i] = input_value(comm.index, i);
  values = encode(c, values);
  // Inputs in three pieces, outputs in two, cut elsewhere (a few cuts fall out of short cases).
  CutBuffer in = cut(values, {c.count / 5, c.count / 2, c.count - c.count / 7});
  CutBuffer out = cut(std::vector<int32_t>(c.count, 0), {c.count / 3});
  ReduceSpec spec;
  spec.dtype = c.dtype;
  spec.op = c.op;
  if (c.average) spec.divisor = comm.size();
  comm.small_bytes = c.small_bytes;
  comm.deterministic = c.deterministic;
  comm.segment_bytes = c.segment_bytes;
  comm.pieces_across_hosts = c.pieces_across_hosts;
  Status st = allreduce(comm, Pieces(in.pieces()), Pieces(out.pieces()), spec);
  ++comm.seq;
  got->out = out.joined();
  got->input_untouched = in.joined() == values && in.guards_intact();
  got->guards_intact = out.guards_intact();
  return st.with_context("allreduce case " + c.name);
}

class AllreduceViews : public ::testing::TestWithParam<int> {};

TEST_P(AllreduceViews, OutOfPlaceOnEveryAlgorithm) {
  const int n = GetParam();
  const std::vector<ViewCase> cases = view_cases();
  std::vector<std::vector<Outcome>> got(cases.size(), std::vector<Outcome>(n));
  run_ranks(n, [&](Comm& comm) {
    for (size_t c = 0; c < cases.size(); ++c) {
      HVDC_RETURN_IF_ERROR(run_case(comm, cases[c], &got[c][comm.index]));
    }
    return Status::ok();
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    std::vector<int32_t> want(cases[c].count);
    for (size_t i = 0; i < want.size(); ++i) want[i] = reduce_ref(cases[c], n, i);
    want = encode(cases[c], want, cases[c].average ? n : 1);
    for (int r = 0; r < n; ++r) {
      const std::string where =
          cases[c].name + ", rank " + std::to_string(r) + " of " + std::to_string(n);
      EXPECT_TRUE(got[c][r].out == want) << where;
      EXPECT_TRUE(got[c][r].input_untouched) << where;
      EXPECT_TRUE(got[c][r].guards_intact) << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllreduceViews, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "n" + std::to_string(info.param);
                         });

TEST(PiecesForEachWith, SplitsAtBothViewsBoundaries) {
  char a[10], b[10];
  const Pieces left(std::vector<Piece>{{a, 3}, {a + 3, 7}});
  const Pieces right(std::vector<Piece>{{b, 5}, {b + 5, 0}, {b + 5, 5}});
  std::vector<size_t> runs;
  left.for_each_with(right, 1, 8, [&](char* mine, char* theirs, size_t n) {
    EXPECT_EQ(mine - a, theirs - b);  // the same offset in both views
    runs.push_back(n);
  });
  EXPECT_EQ((std::vector<size_t>{2, 2, 4}), runs);
}

TEST(PiecesCopyTo, CopiesAcrossDifferentCuts) {
  std::vector<uint8_t> src(100), dst(100, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 3 + 1);
  char* s = reinterpret_cast<char*>(src.data());
  char* d = reinterpret_cast<char*>(dst.data());
  const Pieces from(std::vector<Piece>{{s, 1}, {s + 1, 60}, {s + 61, 39}});
  const Pieces to(std::vector<Piece>{{d, 50}, {d + 50, 50}});
  from.copy_to(to);
  EXPECT_EQ("", first_difference(dst, src));
}

}  // namespace
