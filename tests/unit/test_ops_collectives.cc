// Host collectives of src/ops/cpu (alltoall_pairwise, reducescatter_ring, and allreduce's integer
// averages on each algorithm) on threads acting as ranks: in-process bootstrap, real UCX between
// them, one Comm per rank.
//
// Expectations never come from the code under test: they come from a sequential reference over
// the same deterministic per-rank data. Floating-point data are small integers, so every sum is
// exact whatever order the ring reduces in, and results are compared bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/inprocess.h"
#include "common/dtype.h"
#include "hvdc.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/alltoall/alltoall.h"
#include "ops/cpu/comm.h"
#include "ops/cpu/reducescatter/reducescatter.h"
#include "ucx_ranks.h"

namespace {

using hvdc::bootstrap::Bootstrap;
using hvdc::common::make_error;
using hvdc::common::Status;
using hvdc::ops::cpu::allreduce;
using hvdc::ops::cpu::alltoall_pairwise;
using hvdc::ops::cpu::Comm;
using hvdc::ops::cpu::Piece;
using hvdc::ops::cpu::Pieces;
using hvdc::ops::cpu::reducescatter_ring;
using hvdc::ops::cpu::ReduceSpec;
using hvdc::transport::Transport;

using ucx_ranks::Bytes;
using ucx_ranks::first_difference;
using ucx_ranks::run_ranks;
// Written past the end of every output: a collective must leave it alone.
constexpr uint8_t kGuard = 0xEE;
constexpr size_t kGuardBytes = 16;

Bytes with_guard(size_t bytes) {
  return Bytes(bytes + kGuardBytes, kGuard);
}

class Ranks : public ::testing::TestWithParam<int> {};

std::string ranks_name(const ::testing::TestParamInfo<int>& info) {
  return "n" + std::to_string(info.param);
}

// ---------------------------------------------------------------------------------------------
// Alltoall

// How many bytes rank `from` sends rank `to`.
using SizeFn = std::function<size_t(int from, int to)>;

struct AlltoallCase {
  std::string name;
  SizeFn bytes;
};

std::vector<AlltoallCase> alltoall_cases() {
  return {
      {"even", [](int, int) -> size_t { return 1000; }},
      // Zero for some pairs (own block included), different sizes in each direction.
      {"uneven_with_zeros",
       [](int from, int to) -> size_t { return (from * 3 + to * 5 + 1) % 4 * 333; }},
      {"all_zero", [](int, int) -> size_t { return 0; }},
      {"only_rank0_sends", [](int from, int) -> size_t { return from == 0 ? 777 : 0; }},
      {"only_to_last", [](int, int to) -> size_t { return to == 2 ? 4097 : 0; }},
      {"large", [](int from, int to) -> size_t { return (3u << 20) + from * 4099 + to * 17; }},
  };
}

// Byte i of the block rank `from` sends rank `to`: differs between blocks and along a block.
uint8_t payload(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 67 + to * 13 + i * 7 + i / 251);
}

// Appends the block rank `from` sends rank `to` to `buf`. Sized once and written through a
// pointer: the large cases are tens of MiB, and the AddressSanitizer build runs this at -O0.
void append_block(const AlltoallCase& c, int from, int to, Bytes* buf) {
  const size_t bytes = c.bytes(from, to), at = buf->size();
  buf->resize(at + bytes);
  uint8_t* out = buf->data() + at;
  for (size_t i = 0; i < bytes; ++i) out[i] = payload(from, to, i);
}

Bytes alltoall_send(const AlltoallCase& c, int n, int me) {
  Bytes buf;
  for (int to = 0; to < n; ++to) append_block(c, me, to, &buf);
  return buf;
}

Bytes alltoall_expected(const AlltoallCase& c, int n, int me) {
  Bytes buf;
  for (int from = 0; from < n; ++from) append_block(c, from, me, &buf);
  buf.insert(buf.end(), kGuardBytes, kGuard);
  return buf;
}

Status run_alltoall(Comm& comm, const AlltoallCase& c, Bytes* got) {
  const int n = comm.size(), me = comm.index;
  std::vector<size_t> send_bytes(n), recv_bytes(n);
  for (int m = 0; m < n; ++m) {
    send_bytes[m] = c.bytes(me, m);
    recv_bytes[m] = c.bytes(m, me);
  }
  const Bytes send = alltoall_send(c, n, me);
  *got = with_guard(std::accumulate(recv_bytes.begin(), recv_bytes.end(), size_t{0}));
  Status status = alltoall_pairwise(comm, reinterpret_cast<const char*>(send.data()), send_bytes,
                                    reinterpret_cast<char*>(got->data()), recv_bytes);
  ++comm.seq;
  return status.with_context("alltoall case " + c.name);
}

void check_alltoall(int n, const std::vector<AlltoallCase>& cases) {
  std::vector<std::vector<Bytes>> got(cases.size(), std::vector<Bytes>(n));
  run_ranks(n, [&](Comm& comm) {
    for (size_t c = 0; c < cases.size(); ++c) {
      HVDC_RETURN_IF_ERROR(run_alltoall(comm, cases[c], &got[c][comm.index]));
    }
    return Status::ok();
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ("", first_difference(got[c][r], alltoall_expected(cases[c], n, r)))
          << cases[c].name << ", rank " << r << " of " << n;
    }
  }
}

using AlltoallPairwise = Ranks;

TEST_P(AlltoallPairwise, MatchesReference) {
  check_alltoall(GetParam(), alltoall_cases());
}

INSTANTIATE_TEST_SUITE_P(Ranks, AlltoallPairwise, ::testing::Values(1, 2, 3, 4), ranks_name);

// More ranks than the window of steps in flight, so that request slots are reused.
TEST(AlltoallPairwiseWide, ElevenRanksReuseTheWindow) {
  check_alltoall(11, {{"uneven_with_zeros", [](int from, int to) -> size_t {
                         return (from * 3 + to * 5 + 1) % 4 * 101;
                       }}});
}

TEST(AlltoallPairwiseArgs, RejectsBadBlockLists) {
  Comm comm;
  comm.members = {0, 1};
  comm.index = 1;
  char send[8] = {0}, recv[8] = {0};
  Status st = alltoall_pairwise(comm, send, {1, 1, 1}, recv, {1, 1});
  EXPECT_EQ(HVD_ERR_INVALID_ARGUMENT, st.code()) << st.message();
  st = alltoall_pairwise(comm, send, {1, 2}, recv, {1, 3});
  EXPECT_EQ(HVD_ERR_INVALID_ARGUMENT, st.code()) << st.message();
}

// ---------------------------------------------------------------------------------------------
// Reducescatter

struct ReduceCase {
  std::string name;
  int32_t dtype;
  int32_t op;
  std::vector<size_t> counts;  // one block per rank
  size_t segment_bytes;
  bool average_over_ranks = false;  // divisor = n
  double postscale = 1.0;
  bool in_place = false;  // out is this rank's block of buf
};

// Horovod's split of a first dimension of `rows` over n ranks, times the elements of one row.
std::vector<size_t> split_rows(size_t rows, int n, size_t row_elems) {
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) {
    const size_t rows_here = rows / n + (static_cast<size_t>(r) < rows % n ? 1 : 0);
    counts[r] = rows_here * row_elems;
  }
  return counts;
}

std::vector<size_t> each(int n, const std::function<size_t(int)>& count) {
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = count(r);
  return counts;
}

std::vector<ReduceCase> reduce_cases(int n) {
  const auto same = [n](size_t count) { return std::vector<size_t>(n, count); };
  return {
      {"f32_sum_one_segment", HVD_FLOAT32, HVD_OP_SUM, same(1000), 4096},
      {"f32_sum_many_segments", HVD_FLOAT32, HVD_OP_SUM, same(50000), 4096},
      {"f32_sum_large", HVD_FLOAT32, HVD_OP_SUM, same(1 << 20), 256 << 10},
      {"f32_average_rows_7x33", HVD_FLOAT32, HVD_OP_AVERAGE, split_rows(7, n, 33), 256, true},
      {"f32_min_rows_7x129", HVD_FLOAT32, HVD_OP_MIN, split_rows(7, n, 129), 4096},
      {"f32_max_rows_7x129", HVD_FLOAT32, HVD_OP_MAX, split_rows(7, n, 129), 4096},
      {"f32_sum_postscale", HVD_FLOAT32, HVD_OP_SUM, same(3000), 4096, false, 0.5},
      {"f32_sum_odd_segment_bytes", HVD_FLOAT32, HVD_OP_SUM, same(2001), 1001},
      {"f32_sum_in_place", HVD_FLOAT32, HVD_OP_SUM, split_rows(11, n, 300), 4096, false, 1.0, true},
      {"i32_sum_wraps", HVD_INT32, HVD_OP_SUM, same(3001), 1000},
      {"i32_average", HVD_INT32, HVD_OP_AVERAGE, split_rows(5, n, 41), 4096, true},
      {"i8_average_exact", HVD_INT8, HVD_OP_AVERAGE, split_rows(9, n, 37), 64, true},
      {"u8_average_exact", HVD_UINT8, HVD_OP_AVERAGE, same(777), 100, true},
      {"i64_average_exact", HVD_INT64, HVD_OP_AVERAGE, split_rows(5, n, 301), 1000, true},
      {"i16_average_in_place", HVD_INT16, HVD_OP_AVERAGE, split_rows(6, n, 50), 256, true, 1.0,
       true},
      {"i32_sum_one_element_segments", HVD_INT32, HVD_OP_SUM, same(9), 6},
      {"f16_sum", HVD_FLOAT16, HVD_OP_SUM, each(n, [](int r) { return 5000 + 3 * r; }), 1000},
      {"f16_average_postscale", HVD_FLOAT16, HVD_OP_AVERAGE, split_rows(7, n, 65), 4096, true, 0.5},
      {"f32_sum_empty_odd_ranks", HVD_FLOAT32, HVD_OP_SUM,
       each(n, [](int r) -> size_t { return r % 2 ? 0 : 100 + r; }), 128},
      {"f32_sum_empty_even_ranks", HVD_FLOAT32, HVD_OP_SUM,
       each(n, [](int r) -> size_t { return r % 2 ? 700 + r : 0; }), 128},
      {"f32_sum_all_empty", HVD_FLOAT32, HVD_OP_SUM, same(0), 4096},
  };
}

// Element i of rank `rank`'s input. Floats: small integers, so that sums, minima and maxima are
// exact in any order. Integers: large, so that sums wrap.
template <class T>
T input_value(int rank, size_t i) {
  if constexpr (std::is_integral_v<T>) {
    const uint32_t u =
        static_cast<uint32_t>(rank) * 2654435761u + static_cast<uint32_t>(i) * 40503u;
    if constexpr (sizeof(T) == 8) return static_cast<T>(u * 0x9E3779B97F4A7C15ull);  // any int64
    return static_cast<T>(u);
  } else {
    return static_cast<T>(static_cast<int>((rank * 7 + i * 3 + i / 97) % 11) - 5);
  }
}

template <class T>
T combine(T a, T b, int32_t op) {
  switch (op) {
    case HVD_OP_MIN:
      return std::min(a, b);
    case HVD_OP_MAX:
      return std::max(a, b);
    default:  // sum and average; integers wrap
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      } else {
        return static_cast<T>(a + b);
      }
  }
}

// The exact integer average of element i over ranks 0..n-1: the sum in 128 bits, divided with
// C's truncation toward zero.
template <class T>
T exact_average(int n, size_t i) {
  __int128 sum = 0;
  for (int r = 0; r < n; ++r) sum += input_value<T>(r, i);
  return static_cast<T>(sum / n);
}

// Integer postscale as scale() documents it: in double, nearest (ties to even), saturated.
template <class T>
T int_postscale(T v, double factor) {
  const double p = std::nearbyint(static_cast<double>(v) * factor);
  const double lo = static_cast<double>(std::numeric_limits<T>::min());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  return static_cast<T>(p < lo ? lo : p > hi ? hi : p);
}

// Floats as documented in reduce.h: float16 divides in float and rounds once; postscale values
// used here are exact, so the order of roundings does not matter. (Integer averages come from
// exact_average instead.)
template <class T>
T finish(T v, const ReduceSpec& spec) {
  if constexpr (std::is_integral_v<T>) {
    return v;
  } else {
    if (spec.divisor > 1)
      v = static_cast<T>(static_cast<float>(v) / static_cast<float>(spec.divisor));
    if (spec.postscale != 1.0) v = static_cast<T>(static_cast<double>(v) * spec.postscale);
    return v;
  }
}

template <class T>
Bytes typed_input(int rank, size_t total) {
  Bytes buf(total * sizeof(T));
  for (size_t i = 0; i < total; ++i) {
    const T v = input_value<T>(rank, i);
    std::memcpy(buf.data() + i * sizeof(T), &v, sizeof(T));
  }
  return buf;
}

// This rank's block of the reduction over ranks 0..n-1 in order, finished, plus the guard.
template <class T>
Bytes typed_expected(const ReduceCase& c, const ReduceSpec& spec, int n, int me) {
  const size_t first = std::accumulate(c.counts.begin(), c.counts.begin() + me, size_t{0});
  Bytes buf(c.counts[me] * sizeof(T));
  for (size_t i = 0; i < c.counts[me]; ++i) {
    T v = input_value<T>(0, first + i);
    for (int r = 1; r < n; ++r) v = combine(v, input_value<T>(r, first + i), c.op);
    v = finish(v, spec);
    if constexpr (std::is_integral_v<T>) {
      if (spec.divisor > 1) v = exact_average<T>(n, first + i);
    }
    std::memcpy(buf.data() + i * sizeof(T), &v, sizeof(T));
  }
  if (!c.in_place) buf.insert(buf.end(), kGuardBytes, kGuard);
  return buf;
}

// Calls fn(T{}) with the element type of dtype (the dtypes of these tests).
template <class Fn>
auto with_type(int32_t dtype, Fn&& fn) {
  switch (dtype) {
    case HVD_FLOAT32:
      return fn(float{});
    case HVD_FLOAT16:
      return fn(_Float16{});
    case HVD_INT8:
      return fn(int8_t{});
    case HVD_UINT8:
      return fn(uint8_t{});
    case HVD_INT16:
      return fn(int16_t{});
    case HVD_UINT16:
      return fn(uint16_t{});
    case HVD_INT64:
      return fn(int64_t{});
    default:
      return fn(int32_t{});
  }
}

Bytes make_input(int32_t dtype, int rank, size_t total) {
  return with_type(dtype, [&](auto t) { return typed_input<decltype(t)>(rank, total); });
}

Bytes expected_block(const ReduceCase& c, const ReduceSpec& spec, int n, int me) {
  return with_type(c.dtype, [&](auto t) { return typed_expected<decltype(t)>(c, spec, n, me); });
}

ReduceSpec spec_of(const ReduceCase& c, int n) {
  ReduceSpec spec;
  spec.dtype = c.dtype;
  spec.op = c.op;
  spec.divisor = c.average_over_ranks ? n : 1;
  spec.postscale = c.postscale;
  return spec;
}

Status run_reducescatter(Comm& comm, const ReduceCase& c, Bytes* got) {
  const int n = comm.size(), me = comm.index;
  const size_t esize = hvdc::common::dtype_size(c.dtype);
  const size_t total = std::accumulate(c.counts.begin(), c.counts.end(), size_t{0});
  const size_t first = std::accumulate(c.counts.begin(), c.counts.begin() + me, size_t{0});
  Bytes buf = make_input(c.dtype, me, total);
  *got = with_guard(c.counts[me] * esize);
  void* out = c.in_place ? buf.data() + first * esize : got->data();
  comm.segment_bytes = c.segment_bytes;
  Status status = reducescatter_ring(comm, buf.data(), c.counts, out, spec_of(c, n));
  if (c.in_place) {
    got->assign(buf.begin() + first * esize, buf.begin() + (first + c.counts[me]) * esize);
  }
  ++comm.seq;
  return status.with_context("reducescatter case " + c.name);
}

using ReducescatterRing = Ranks;

TEST_P(ReducescatterRing, MatchesReference) {
  const int n = GetParam();
  const std::vector<ReduceCase> cases = reduce_cases(n);
  std::vector<std::vector<Bytes>> got(cases.size(), std::vector<Bytes>(n));
  run_ranks(n, [&](Comm& comm) {
    for (size_t c = 0; c < cases.size(); ++c) {
      HVDC_RETURN_IF_ERROR(run_reducescatter(comm, cases[c], &got[c][comm.index]));
    }
    return Status::ok();
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ("",
                first_difference(got[c][r], expected_block(cases[c], spec_of(cases[c], n), n, r)))
          << cases[c].name << ", rank " << r << " of " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReducescatterRing, ::testing::Values(1, 2, 3, 4), ranks_name);

TEST(ReducescatterRingArgs, RejectsBadCountsAndDtype) {
  Comm comm;
  comm.members = {0, 1};
  float buf[4] = {0}, out[2] = {0};
  ReduceSpec spec;
  spec.dtype = HVD_FLOAT32;
  spec.op = HVD_OP_SUM;
  Status st = reducescatter_ring(comm, buf, {2, 1, 1}, out, spec);
  EXPECT_EQ(HVD_ERR_INVALID_ARGUMENT, st.code()) << st.message();
  spec.dtype = 12345;
  st = reducescatter_ring(comm, buf, {2, 2}, out, spec);
  EXPECT_EQ(HVD_ERR_INVALID_ARGUMENT, st.code()) << st.message();
}

// ---------------------------------------------------------------------------------------------
// Allreduce: integer averages are exact on every algorithm, over one buffer or fused pieces.

struct AverageCase {
  std::string name;
  int32_t dtype;
  size_t count;
  size_t small_bytes;  // comm.small_bytes: up to it (of int64 lanes) the direct algorithm runs
  bool deterministic;  // above it: the ring, or the member-ordered algorithm
  size_t pieces = 1;   // the buffer cut into this many tensors (a fused allreduce)
  double postscale = 1.0;
};

std::vector<AverageCase> average_cases() {
  return {
      {"i8_direct", HVD_INT8, 1000, 64 << 10, false},
      {"i8_ring", HVD_INT8, 5001, 0, false},
      {"i8_ordered", HVD_INT8, 5001, 0, true},
      {"u8_ring_pieces", HVD_UINT8, 7777, 0, false, 5},
      {"u16_direct_pieces", HVD_UINT16, 999, 64 << 10, false, 3},
      {"i16_ordered_pieces", HVD_INT16, 4099, 0, true, 4},
      {"i32_ring_postscale", HVD_INT32, 3001, 0, false, 1, 0.5},
      {"i32_direct_postscale", HVD_INT32, 31, 64 << 10, false, 2, 3.0},
      {"i64_direct", HVD_INT64, 500, 64 << 10, false},
      {"i64_ring_pieces", HVD_INT64, 6007, 0, false, 3},
      {"i64_ordered", HVD_INT64, 6007, 0, true},
  };
}

template <class T>
Bytes average_expected(const AverageCase& c, int n) {
  Bytes buf(c.count * sizeof(T));
  for (size_t i = 0; i < c.count; ++i) {
    T v = exact_average<T>(n, i);
    if (c.postscale != 1.0) v = int_postscale(v, c.postscale);
    std::memcpy(buf.data() + i * sizeof(T), &v, sizeof(T));
  }
  return buf;
}

// Runs the case over c.pieces separate buffers of unequal sizes; *got is them end to end.
Status run_average(Comm& comm, const AverageCase& c, Bytes* got) {
  const size_t esize = hvdc::common::dtype_size(c.dtype);
  const Bytes input = make_input(c.dtype, comm.index, c.count);
  std::vector<Bytes> parts;
  std::vector<Piece> pieces;
  for (size_t p = 0, at = 0; p < c.pieces; ++p) {
    const size_t elems = p + 1 == c.pieces ? c.count - at : c.count / (2 * c.pieces) + p;
    parts.emplace_back(input.begin() + at * esize, input.begin() + (at + elems) * esize);
    at += elems;
  }
  for (Bytes& part : parts) pieces.push_back({reinterpret_cast<char*>(part.data()), part.size()});
  ReduceSpec spec;
  spec.dtype = c.dtype;
  spec.op = HVD_OP_AVERAGE;
  spec.divisor = comm.size();
  spec.postscale = c.postscale;
  comm.small_bytes = c.small_bytes;
  comm.deterministic = c.deterministic;
  comm.segment_bytes = 4096;
  Status status = allreduce(comm, Pieces(std::move(pieces)), spec);
  got->clear();
  for (const Bytes& part : parts) got->insert(got->end(), part.begin(), part.end());
  ++comm.seq;
  return status.with_context("allreduce case " + c.name);
}

using AllreduceIntegerAverage = Ranks;

TEST_P(AllreduceIntegerAverage, ExactOnEveryAlgorithm) {
  const int n = GetParam();
  const std::vector<AverageCase> cases = average_cases();
  std::vector<std::vector<Bytes>> got(cases.size(), std::vector<Bytes>(n));
  run_ranks(n, [&](Comm& comm) {
    for (size_t c = 0; c < cases.size(); ++c) {
      HVDC_RETURN_IF_ERROR(run_average(comm, cases[c], &got[c][comm.index]));
    }
    return Status::ok();
  });
  for (size_t c = 0; c < cases.size(); ++c) {
    const Bytes want = with_type(
        cases[c].dtype, [&](auto t) { return average_expected<decltype(t)>(cases[c], n); });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ("", first_difference(got[c][r], want))
          << cases[c].name << ", rank " << r << " of " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllreduceIntegerAverage, ::testing::Values(1, 2, 3, 4), ranks_name);

}  // namespace
