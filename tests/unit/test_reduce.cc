// Tests for the CPU reduce kernels (src/ops/cpu/reduce): reduce() over every dtype and op with
// aliasing, and the float16 / bfloat16 conversions it relies on (scale() and divide() are in
// test_scale.cc).
//
// Expectations never come from the code under test. 16-bit floats are checked against a
// reference that rounds exact (double) results with frexp/ldexp/nearbyint, and the conversions
// also against GCC's _Float16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "hvdc.h"
#include "kernel_reference.h"
#include "ops/cpu/reduce/half.h"
#include "ops/cpu/reduce/reduce.h"

namespace {

using namespace kernel_test;
using hvdc::common::dtype_name;
using hvdc::common::dtype_size;
using hvdc::common::reduce_op_name;
using hvdc::ops::cpu::reduce;
using hvdc::ops::cpu::reduce_into_both;

// ---- Reference element-wise reduction -------------------------------------------------------

// min/max as IEEE 754-2019 minimum/maximum: NaN wins, -0 < +0.
double ref_float_op(double a, double b, int32_t op) {
  if (op == HVD_OP_PRODUCT) return a * b;
  if (op != HVD_OP_MIN && op != HVD_OP_MAX) return a + b;
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  if (a == 0 && b == 0) {
    const bool neg = op == HVD_OP_MIN ? (std::signbit(a) || std::signbit(b))
                                      : (std::signbit(a) && std::signbit(b));
    return neg ? -0.0 : 0.0;
  }
  return op == HVD_OP_MIN ? (a < b ? a : b) : (a > b ? a : b);
}

// Exact result in 128 bits, then its low bytes reinterpreted as T (little endian).
template <class T>
T ref_int_op(T a, T b, int32_t op) {
  const __int128 x = a, y = b;
  __int128 r = x + y;
  if (op == HVD_OP_MIN) r = x < y ? x : y;
  if (op == HVD_OP_MAX) r = x > y ? x : y;
  if (op == HVD_OP_PRODUCT) r = x * y;
  const uint64_t low = static_cast<uint64_t>(static_cast<unsigned __int128>(r));
  return load<T>(reinterpret_cast<const uint8_t*>(&low));
}

void ref_elem(int32_t dtype, int32_t op, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  auto ints = [&](auto t) {
    using T = decltype(t);
    put(out, ref_int_op(load<T>(a), load<T>(b), op));
  };
  if (visit_int(dtype, ints)) return;
  if (dtype == HVD_FLOAT32) {
    // A float sum rounded in double first is still correctly rounded (53 >= 2 * 24 + 2).
    put(out, static_cast<float>(ref_float_op(load<float>(a), load<float>(b), op)));
  } else if (dtype == HVD_FLOAT64) {
    put(out, ref_float_op(load<double>(a), load<double>(b), op));
  } else if (dtype == HVD_BOOL) {
    const bool is_and = op == HVD_OP_PRODUCT || op == HVD_OP_MIN;
    *out = is_and ? (*a != 0 && *b != 0) : (*a != 0 || *b != 0);
  } else {  // float16 / bfloat16: exact or innocuously rounded double, then one rounding
    const Fmt f = fmt_of(dtype);
    const double r =
        ref_float_op(ref_decode(load<uint16_t>(a), f), ref_decode(load<uint16_t>(b), f), op);
    put(out, ref_encode(r, f));
  }
}

// Hand-picked (a, b) pairs, flattened, written at the front of the buffers.
// float16: 2048+1 and 2048+3 tie (to 2048, 2052); 65504+16 overflows, 65504+8 does not;
// subnormal sums and products that tie at 2^-24; +-0; NaN (also signaling) against numbers.
// bfloat16: 256+1 and 256+3 tie; max + max overflows; subnormal ties; +-0; NaN.
const std::map<int32_t, std::vector<int64_t>> kEdgePairs = {
    {HVD_UINT8, {255, 1, 200, 100, 16, 16, 255, 255}},
    {HVD_INT8, {127, 1, -128, -1, 16, 8, -128, -128, 100, 100}},
    {HVD_UINT16, {65535, 1, 65535, 65535, 256, 256, 40000, 40000}},
    {HVD_INT16, {32767, 1, -32768, -1, 256, 128, -32768, 2}},
    {HVD_INT32, {INT32_MAX, 1, INT32_MIN, -1, 65536, 65536}},
    {HVD_INT64, {INT64_MAX, 1, INT64_MIN, -1, 1LL << 32, 1LL << 32}},
    {HVD_FLOAT16, {0x6800, 0x3C00, 0x6800, 0x4200, 0x7BFF, 0x4C00, 0x7BFF, 0x4800,
                   0x0001, 0x0001, 0x0001, 0x3800, 0x0003, 0x3800, 0x8000, 0x0000,
                   0x7E00, 0x3C00, 0x3C00, 0x7C01, 0x03FF, 0x0001, 0xFBFF, 0xCC00}},
    {HVD_BFLOAT16,
     {0x4380, 0x3F80, 0x4380, 0x4040, 0x7F7F, 0x7F7F, 0x0001, 0x3F00, 0x0003, 0x3F00,
      0x8000, 0x0000, 0x7FC0, 0x3F80, 0x3F80, 0x7F81, 0x007F, 0x0001, 0x7F7F, 0x7B00}}};

void put_edge_pairs(int32_t dtype, uint8_t* a, uint8_t* b, size_t n) {
  const auto it = kEdgePairs.find(dtype);
  if (it == kEdgePairs.end()) return;
  const size_t sz = dtype_size(dtype);
  for (size_t i = 0; 2 * i < it->second.size() && i < n; ++i) {
    std::memcpy(a + i * sz, &it->second[2 * i], sz);  // little endian: the low bytes
    std::memcpy(b + i * sz, &it->second[2 * i + 1], sz);
  }
}

template <class T>
void expect_reduce(int32_t dtype, int32_t op, std::vector<T> a, std::vector<T> b,
                   const std::vector<T>& want) {
  std::vector<T> out(a.size());
  reduce(out.data(), a.data(), b.data(), a.size(), dtype, op);
  expect_values(dtype, out, want);
}

// ---- reduce() --------------------------------------------------------------------------------

enum class Alias { kNone, kDstIsA, kDstIsB, kAll };

void check_reduce(int32_t dtype, int32_t op, size_t n, Alias alias, Rng& rng) {
  SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduce_op_name(op) +
               " n=" + std::to_string(n) + " alias=" + std::to_string(static_cast<int>(alias)));
  const size_t sz = dtype_size(dtype);
  Bytes a(n * sz + 1), b(n * sz + 1), want(n * sz + 1);
  fill_random(dtype, a.data(), n, rng);
  fill_random(dtype, b.data(), n, rng);
  put_edge_pairs(dtype, a.data(), b.data(), n);
  if (alias == Alias::kAll) b = a;
  for (size_t i = 0; i < n; ++i) ref_elem(dtype, op, &a[i * sz], &b[i * sz], &want[i * sz]);
  Bytes out(n * sz + 1, 0xAB);
  switch (alias) {
    case Alias::kNone:
      reduce(out.data(), a.data(), b.data(), n, dtype, op);
      break;
    case Alias::kDstIsA:
      out = a;
      reduce(out.data(), out.data(), b.data(), n, dtype, op);
      break;
    case Alias::kDstIsB:
      out = b;
      reduce(out.data(), a.data(), out.data(), n, dtype, op);
      break;
    case Alias::kAll:
      out = a;
      reduce(out.data(), out.data(), out.data(), n, dtype, op);
      break;
  }
  expect_elems(dtype, a, out, want, n);
  if (alias == Alias::kNone) {
    EXPECT_EQ(out[n * sz], 0xAB) << "wrote past the end";
  }
}

TEST(ReduceTest, AllDtypesOpsAndAliasing) {
  Rng rng(1);
  for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB, Alias::kAll}) {
    for (int32_t dtype : kAllDtypes) {
      for (int32_t op : kAllOps) {
        for (size_t n : kSizes) check_reduce(dtype, op, n, alias, rng);
      }
    }
  }
}

TEST(ReduceTest, LargeBuffers) {
  Rng rng(5);
  for (int32_t dtype : kAllDtypes) {
    for (int32_t op : kAllOps) check_reduce(dtype, op, 50001, Alias::kNone, rng);
  }
}

// reduce_into_both(): x and y both end with x op y (x the first operand), every dtype it takes;
// float16 is refused and left untouched.
TEST(ReduceTest, IntoBothMatchesTheReferenceInBothBuffers) {
  Rng rng(7);
  for (int32_t dtype : kAllDtypes) {
    for (int32_t op : kAllOps) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{50001}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduce_op_name(op) +
                     " n=" + std::to_string(n));
        const size_t sz = dtype_size(dtype);
        Bytes x(n * sz + 1, 0xAB), y(n * sz + 1, 0xCD), want(n * sz + 1);
        fill_random(dtype, x.data(), n, rng);
        fill_random(dtype, y.data(), n, rng);
        put_edge_pairs(dtype, x.data(), y.data(), n);
        const Bytes x0 = x, y0 = y;
        for (size_t i = 0; i < n; ++i) ref_elem(dtype, op, &x[i * sz], &y[i * sz], &want[i * sz]);
        const bool done = reduce_into_both(x.data(), y.data(), n, dtype, op);
        if (dtype == HVD_FLOAT16) {
          EXPECT_FALSE(done);
          EXPECT_EQ(x, x0);
          EXPECT_EQ(y, y0);
          continue;
        }
        ASSERT_TRUE(done);
        expect_elems(dtype, x0, x, want, n);
        expect_elems(dtype, x0, y, want, n);
        EXPECT_EQ(x[n * sz], 0xAB) << "wrote past the end of x";
        EXPECT_EQ(y[n * sz], 0xCD) << "wrote past the end of y";
      }
    }
  }
}

TEST(ReduceTest, IntegerWrapAround) {
  expect_reduce<int32_t>(HVD_INT32, HVD_OP_SUM, {INT32_MAX, INT32_MIN}, {1, -1},
                         {INT32_MIN, INT32_MAX});
  expect_reduce<int32_t>(HVD_INT32, HVD_OP_PRODUCT, {65536}, {65536}, {0});
  expect_reduce<int8_t>(HVD_INT8, HVD_OP_PRODUCT, {16, -128, 100}, {16, -1, 3}, {0, -128, 44});
  expect_reduce<uint8_t>(HVD_UINT8, HVD_OP_SUM, {200, 255}, {100, 1}, {44, 0});
  // (2^16 - 1)^2 = 1 mod 2^16, with no signed overflow on the way.
  expect_reduce<uint16_t>(HVD_UINT16, HVD_OP_PRODUCT, {65535}, {65535}, {1});
  expect_reduce<int64_t>(HVD_INT64, HVD_OP_SUM, {INT64_MAX}, {1}, {INT64_MIN});
}

TEST(ReduceTest, BoolTruthTable) {
  const std::vector<uint8_t> a = {0, 0, 1, 1, 2, 255, 0}, b = {0, 1, 0, 1, 7, 0, 128};
  for (int32_t op : {HVD_OP_SUM, HVD_OP_MAX, HVD_OP_AVERAGE}) {
    expect_reduce<uint8_t>(HVD_BOOL, op, a, b, {0, 1, 1, 1, 1, 1, 1});
  }
  for (int32_t op : {HVD_OP_PRODUCT, HVD_OP_MIN}) {
    expect_reduce<uint8_t>(HVD_BOOL, op, a, b, {0, 0, 0, 1, 1, 0, 0});
  }
}

TEST(ReduceTest, FloatMinMaxNanAndSignedZero) {
  const float nan = std::nanf("");
  const float a[] = {nan, 1.0f, -0.0f, 0.0f, 2.0f}, b[] = {1.0f, nan, 0.0f, -0.0f, -3.0f};
  float mn[5], mx[5];
  reduce(mn, a, b, 5, HVD_FLOAT32, HVD_OP_MIN);
  reduce(mx, a, b, 5, HVD_FLOAT32, HVD_OP_MAX);
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]) && std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_TRUE(mn[2] == 0 && std::signbit(mn[2]) && std::signbit(mn[3]));
  EXPECT_TRUE(mx[2] == 0 && !std::signbit(mx[2]) && !std::signbit(mx[3]));
  EXPECT_EQ(mn[4], -3.0f);
  EXPECT_EQ(mx[4], 2.0f);
}

// ---- conversions -----------------------------------------------------------------------------

void check_widen(Fmt f, float (*widen)(uint16_t)) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float got = widen(h);
    const double want = ref_decode(h, f);
    if (!std::isnan(want)) {
      ASSERT_EQ(fbits(got), fbits(static_cast<float>(want))) << i;
      continue;
    }
    ASSERT_TRUE(std::isnan(got) && (fbits(got) & 0x400000u)) << "not a quiet NaN: " << i;
    ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << i;
  }
}

TEST(HalfTest, WidenExhaustive) {
  check_widen(kHalf, hvdc::ops::cpu::half_to_float);
  check_widen(kBf16, hvdc::ops::cpu::bf16_to_float);
  for (uint32_t i = 0; i < 65536; ++i) {  // and against GCC's own float16
    if ((i & 0x7FFF) > 0x7C00) continue;  // NaN payloads may differ
    const _Float16 h = load<_Float16>(reinterpret_cast<const uint8_t*>(&i));
    ASSERT_EQ(fbits(hvdc::ops::cpu::half_to_float(static_cast<uint16_t>(i))),
              fbits(static_cast<float>(h)));
  }
}

// Floats that exercise every rounding decision: each 16-bit value, each midpoint between
// neighbours and one float ulp either side of it, plus random and special floats.
std::vector<float> narrowing_inputs(Fmt f, Rng& rng) {
  std::vector<float> v;
  for (uint32_t h = 0; h < 65536; ++h) {
    const double x = ref_decode(static_cast<uint16_t>(h), f);
    if (std::isnan(x) || std::isinf(x)) continue;
    // Past the largest finite value the next neighbour is 2^(emax+1), which decides overflow.
    const bool top = (h & 0x7FFF) == f.inf() - 1u;
    const double next = top ? std::copysign(std::ldexp(1.0, f.bias + 1), x)
                            : ref_decode(static_cast<uint16_t>(h + 1), f);
    const float mid = static_cast<float>((x + next) / 2);  // exact in float
    v.insert(v.end(), {static_cast<float>(x), mid, std::nextafter(mid, static_cast<float>(x)),
                       std::nextafter(mid, static_cast<float>(2 * next))});
  }
  for (int i = 0; i < 1000000; ++i) v.push_back(ffrom(static_cast<uint32_t>(rng())));
  for (uint32_t u : {0x7F800001u, 0xFF800001u, 0x7FC00000u, 0x7FFFFFFFu, 0x7F7FFFFFu, 0x1u,
                     0x807FFFFFu, 0x33000000u, 0x33000001u, 0x477FE000u, 0x477FF000u}) {
    v.push_back(ffrom(u));
  }
  return v;
}

void check_narrow(Fmt f, uint16_t (*narrow)(float), bool with_gcc) {
  Rng rng(11);
  for (float x : narrowing_inputs(f, rng)) {
    const uint16_t got = narrow(x);
    if (std::isnan(x)) {
      ASSERT_TRUE(is_quiet_nan16(got, f)) << std::hex << fbits(x) << " -> " << got;
      ASSERT_EQ(got & 0x8000, (fbits(x) >> 16) & 0x8000);
      continue;
    }
    ASSERT_EQ(got, ref_encode(x, f)) << std::hex << fbits(x);
    if (with_gcc) {
      const _Float16 h = static_cast<_Float16>(x);
      ASSERT_EQ(got, load<uint16_t>(reinterpret_cast<const uint8_t*>(&h))) << std::hex << fbits(x);
    }
  }
}

TEST(HalfTest, NarrowHalf) {
  check_narrow(kHalf, hvdc::ops::cpu::float_to_half, true);
}
TEST(HalfTest, NarrowBf16) {
  check_narrow(kBf16, hvdc::ops::cpu::float_to_bf16, false);
}

TEST(HalfTest, ReferenceRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    for (Fmt f : {kHalf, kBf16}) {
      const double x = ref_decode(static_cast<uint16_t>(h), f);
      if (!std::isnan(x)) {
        ASSERT_EQ(ref_encode(x, f), h);
      }
    }
  }
}

}  // namespace
