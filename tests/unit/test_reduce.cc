// Tests for the CPU reduce kernels (src/ops/cpu/reduce): conversions, reduce(), scale(),
// divide(), aliasing, and a throughput report.
//
// Expectations never come from the code under test. 16-bit floats are checked against a
// reference that rounds exact (double) results with frexp/ldexp/nearbyint, and the conversions
// also against GCC's _Float16.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "hvdc.h"
#include "ops/cpu/reduce/half.h"
#include "ops/cpu/reduce/reduce.h"

namespace {

using hvdc::common::dtype_name;
using hvdc::common::dtype_size;
using hvdc::common::reduce_op_name;
using hvdc::ops::cpu::divide;
using hvdc::ops::cpu::reduce;
using hvdc::ops::cpu::scale;

using Bytes = std::vector<uint8_t>;
using Rng = std::mt19937_64;

const int32_t kAllDtypes[] = {HVD_UINT8,   HVD_INT8,  HVD_UINT16,  HVD_INT16,
                              HVD_INT32,   HVD_INT64, HVD_FLOAT16, HVD_FLOAT32,
                              HVD_FLOAT64, HVD_BOOL,  HVD_BFLOAT16};
const int32_t kAllOps[] = {HVD_OP_AVERAGE, HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
const size_t kSizes[] = {0, 1, 7, 64, 1000, 4099};

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void put(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
uint32_t fbits(float f) {
  return load<uint32_t>(reinterpret_cast<const uint8_t*>(&f));
}
float ffrom(uint32_t u) {
  return load<float>(reinterpret_cast<const uint8_t*>(&u));
}

// Calls fn(T{}) for the integer dtypes (values 0..5); false for the others.
template <class Fn>
bool visit_int(int32_t dtype, Fn&& fn) {
  if (dtype == HVD_UINT8) fn(uint8_t{});
  if (dtype == HVD_INT8) fn(int8_t{});
  if (dtype == HVD_UINT16) fn(uint16_t{});
  if (dtype == HVD_INT16) fn(int16_t{});
  if (dtype == HVD_INT32) fn(int32_t{});
  if (dtype == HVD_INT64) fn(int64_t{});
  return dtype <= HVD_INT64;
}

// ---- Reference 16-bit floating formats -----------------------------------------------------

struct Fmt {
  int mant;  // stored mantissa bits
  int exp;   // exponent bits
  int bias;
  uint16_t inf() const { return static_cast<uint16_t>(((1 << exp) - 1) << mant); }
};
constexpr Fmt kHalf{10, 5, 15};
constexpr Fmt kBf16{7, 8, 127};
Fmt fmt_of(int32_t dtype) {
  return dtype == HVD_FLOAT16 ? kHalf : kBf16;
}

double ref_decode(uint16_t h, Fmt f) {
  const int e = (h >> f.mant) & ((1 << f.exp) - 1);
  const int m = h & ((1 << f.mant) - 1);
  double v = std::ldexp(e == 0 ? m : m + (1 << f.mant), std::max(e, 1) - f.bias - f.mant);
  if (e == (1 << f.exp) - 1) v = m != 0 ? std::nan("") : HUGE_VAL;
  return (h & 0x8000) ? -v : v;
}

// Correctly rounded (nearest, ties to even) encoding of v. NaN gives the canonical quiet NaN.
uint16_t ref_encode(double v, Fmt f) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return static_cast<uint16_t>(sign | f.inf() | (1 << (f.mant - 1)));
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | f.inf();
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  int exp = std::max(e - 1, 1 - f.bias);  // a < 2^(exp+1); subnormals share the minimum exponent
  double n = std::nearbyint(std::ldexp(a, f.mant - exp));
  if (n >= std::ldexp(1.0, f.mant + 1)) {
    n /= 2;
    exp += 1;
  }
  if (exp > f.bias) return sign | f.inf();
  const uint32_t ni = static_cast<uint32_t>(n);
  if (ni < (1u << f.mant)) return static_cast<uint16_t>(sign | ni);
  return static_cast<uint16_t>(sign | ((exp + f.bias) << f.mant) | (ni - (1u << f.mant)));
}

bool is_nan16(uint16_t h, Fmt f) {
  return (h & 0x7FFF) > f.inf();
}
bool is_quiet_nan16(uint16_t h, Fmt f) {
  return is_nan16(h, f) && (h & (1 << (f.mant - 1)));
}

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

// Bit equality; a NaN expectation accepts any quiet NaN.
bool same_elem(int32_t dtype, const uint8_t* actual, const uint8_t* expected) {
  if (dtype == HVD_FLOAT32 && std::isnan(load<float>(expected))) {
    return std::isnan(load<float>(actual)) && (load<uint32_t>(actual) & 0x400000);
  }
  if (dtype == HVD_FLOAT64 && std::isnan(load<double>(expected))) {
    return std::isnan(load<double>(actual)) && ((load<uint64_t>(actual) >> 51) & 1);
  }
  if ((dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) &&
      is_nan16(load<uint16_t>(expected), fmt_of(dtype))) {
    return is_quiet_nan16(load<uint16_t>(actual), fmt_of(dtype));
  }
  return std::memcmp(actual, expected, dtype_size(dtype)) == 0;
}

std::string elem_str(int32_t dtype, const uint8_t* p) {
  std::string s;
  if (visit_int(dtype, [&](auto t) { s = std::to_string(load<decltype(t)>(p)); })) return s;
  char buf[96] = "?";
  if (dtype == HVD_BOOL) std::snprintf(buf, sizeof buf, "%d", *p);
  if (dtype == HVD_FLOAT32) std::snprintf(buf, sizeof buf, "%a", load<float>(p));
  if (dtype == HVD_FLOAT64) std::snprintf(buf, sizeof buf, "%a", load<double>(p));
  if (dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) {
    const uint16_t h = load<uint16_t>(p);
    std::snprintf(buf, sizeof buf, "0x%04x (%a)", h, ref_decode(h, fmt_of(dtype)));
  }
  return buf;
}

// ---- Test data -------------------------------------------------------------------------------

template <class T>
T random_int(Rng& rng) {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const T edges[] = {
      0, 1, static_cast<T>(-1), lo, hi, static_cast<T>(lo + 1), static_cast<T>(hi - 1)};
  if (rng() % 4 == 0) return edges[rng() % 7];
  if (rng() % 3 == 0) return static_cast<T>(static_cast<int64_t>(rng() % 33) - 16);
  const uint64_t bits = rng();
  return load<T>(reinterpret_cast<const uint8_t*>(&bits));
}

template <class F>
F random_float(Rng& rng) {
  using L = std::numeric_limits<F>;
  const F inf = L::infinity(), nan = L::quiet_NaN(), tiny = L::denorm_min(), big = L::max();
  const F edges[] = {0,    -F(0), inf,      -inf, nan,  -nan, L::signaling_NaN(),
                     tiny, -tiny, L::min(), big,  -big, 1,    -1};
  const uint64_t bits = rng();
  const uint64_t kind = rng() % 8;
  if (kind == 0) return edges[rng() % 14];
  if (kind == 1) return load<F>(reinterpret_cast<const uint8_t*>(&bits));  // any class
  // Nearby magnitudes, so that sums and products really round.
  const F m = static_cast<F>(static_cast<double>(bits >> 11) / std::ldexp(1.0, 53) + 0.5);
  return (rng() & 1 ? -m : m) * std::ldexp(F(1), static_cast<int>(rng() % 40) - 20);
}

uint16_t random_16(Rng& rng, Fmt f) {
  const uint16_t sign = rng() & 1 ? 0x8000 : 0;
  const uint64_t kind = rng() % 4;
  if (kind == 0) return static_cast<uint16_t>(rng());  // every class, subnormals and NaNs
  if (kind == 1) return static_cast<uint16_t>(sign | rng() % (3u << f.mant));  // subnormals
  // Exponents close to 1.0, so that sums round at the last bit.
  const uint32_t e = f.bias - 3 + rng() % 8;
  return static_cast<uint16_t>(sign | e << f.mant | (rng() & ((1u << f.mant) - 1)));
}

void fill_random(int32_t dtype, uint8_t* p, size_t n, Rng& rng) {
  const size_t sz = dtype_size(dtype);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = p + i * sz;
    if (visit_int(dtype, [&](auto t) { put(e, random_int<decltype(t)>(rng)); })) continue;
    if (dtype == HVD_FLOAT32) put(e, random_float<float>(rng));
    if (dtype == HVD_FLOAT64) put(e, random_float<double>(rng));
    if (dtype == HVD_BOOL) *e = rng() % 3 == 0 ? static_cast<uint8_t>(rng()) : rng() % 2;
    if (dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) put(e, random_16(rng, fmt_of(dtype)));
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

// Compares got with want element by element, reporting the first few differences.
void expect_elems(int32_t dtype, const Bytes& in, const Bytes& got, const Bytes& want, size_t n) {
  const size_t sz = dtype_size(dtype);
  int failures = 0;
  for (size_t i = 0; i < n && failures < 5; ++i) {
    if (same_elem(dtype, &got[i * sz], &want[i * sz])) continue;
    ++failures;
    ADD_FAILURE() << "i=" << i << " in=" << elem_str(dtype, &in[i * sz])
                  << " got=" << elem_str(dtype, &got[i * sz])
                  << " want=" << elem_str(dtype, &want[i * sz]);
  }
}

// Explicit cases: T is the element type of dtype.
template <class T>
void expect_values(int32_t dtype, const std::vector<T>& got, const std::vector<T>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(+got[i], +want[i]) << dtype_name(dtype) << " [" << i << "]";
  }
}
template <class T>
void expect_reduce(int32_t dtype, int32_t op, std::vector<T> a, std::vector<T> b,
                   const std::vector<T>& want) {
  std::vector<T> out(a.size());
  reduce(out.data(), a.data(), b.data(), a.size(), dtype, op);
  expect_values(dtype, out, want);
}
template <class T>
void expect_scale(int32_t dtype, std::vector<T> x, double factor, const std::vector<T>& want) {
  scale(x.data(), x.data(), x.size(), dtype, factor);
  expect_values(dtype, x, want);
}
template <class T>
void expect_divide(int32_t dtype, std::vector<T> x, int64_t divisor, const std::vector<T>& want) {
  divide(x.data(), x.size(), dtype, divisor);
  expect_values(dtype, x, want);
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

// ---- scale() and divide() --------------------------------------------------------------------

using ElemFn = std::function<void(const uint8_t* in, uint8_t* out)>;

// Runs run() over random data (in place or not) and compares with ref() per element.
void check_map(int32_t dtype, const std::string& what, Rng& rng, const ElemFn& ref,
               const std::function<void(void* dst, const void* src, size_t n)>& run) {
  const size_t sz = dtype_size(dtype);
  for (size_t n : kSizes) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + what + " n=" + std::to_string(n) +
                   (in_place ? " in place" : ""));
      Bytes src(n * sz), want(n * sz), out(n * sz);
      fill_random(dtype, src.data(), n, rng);
      for (size_t i = 0; i < n; ++i) ref(&src[i * sz], &want[i * sz]);
      if (in_place) out = src;
      run(out.data(), in_place ? out.data() : src.data(), n);
      expect_elems(dtype, src, out, want, n);
    }
  }
}

template <class T>
T ref_scale_int(T x, double factor) {
  const double r = std::nearbyint(static_cast<double>(x) * factor);
  if (std::isnan(r)) return 0;
  using L = std::numeric_limits<T>;
  if (static_cast<long double>(r) <= L::min()) return L::min();
  if (static_cast<long double>(r) >= L::max()) return L::max();
  return static_cast<T>(r);
}

void ref_scale(int32_t dtype, double factor, const uint8_t* x, uint8_t* out) {
  auto ints = [&](auto t) { put(out, ref_scale_int(load<decltype(t)>(x), factor)); };
  if (visit_int(dtype, ints)) return;
  if (dtype == HVD_FLOAT32) put(out, static_cast<float>(load<float>(x) * factor));
  if (dtype == HVD_FLOAT64) put(out, load<double>(x) * factor);
  if (dtype == HVD_BOOL) *out = *x != 0 && factor != 0;
  if (dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) {
    // The product of a 16-bit value and a float is exact in double; round to float, then to 16.
    const double p = ref_decode(load<uint16_t>(x), fmt_of(dtype)) * static_cast<float>(factor);
    put(out, ref_encode(static_cast<float>(p), fmt_of(dtype)));
  }
}

TEST(ScaleTest, AllDtypesRandom) {
  Rng rng(21);
  const double factors[] = {1.0, 0.5,  -0.5,  1.5,   2.5, 0.1,          1.0 / 3, -7.25,
                            0.0, 1e10, -1e10, 1e-30, 3.0, std::nan(""), HUGE_VAL};
  for (int32_t dtype : kAllDtypes) {
    for (double factor : factors) {
      check_map(
          dtype, "factor=" + std::to_string(factor), rng,
          [&](const uint8_t* x, uint8_t* out) { ref_scale(dtype, factor, x, out); },
          [&](void* d, const void* s, size_t n) { scale(d, s, n, dtype, factor); });
    }
  }
}

TEST(ScaleTest, IntegerTiesToEvenAndSaturation) {
  expect_scale<int32_t>(HVD_INT32, {1, 3, 5, 7, -1, -3, -5, -7, INT32_MAX}, 0.5,
                        {0, 2, 2, 4, 0, -2, -2, -4, 1073741824});
  expect_scale<int32_t>(HVD_INT32, {INT32_MAX, INT32_MIN, 2}, 3.0, {INT32_MAX, INT32_MIN, 6});
  expect_scale<uint8_t>(HVD_UINT8, {200, 3, 5}, 2.0, {255, 6, 10});
  expect_scale<uint8_t>(HVD_UINT8, {200, 3}, -1.0, {0, 0});
  expect_scale<int8_t>(HVD_INT8, {-100, 100, 5}, 2.0, {-128, 127, 10});
  // INT64_MAX is 2^63 as a double and saturates; a NaN product gives 0.
  expect_scale<int64_t>(HVD_INT64, {INT64_MAX, INT64_MIN, 1LL << 40}, 1.0,
                        {INT64_MAX, INT64_MIN, 1LL << 40});
  expect_scale<int64_t>(HVD_INT64, {3, -3}, std::nan(""), {0, 0});
  expect_scale<uint8_t>(HVD_BOOL, {0, 1, 7}, 0.5, {0, 1, 1});
  expect_scale<uint8_t>(HVD_BOOL, {0, 1, 7}, 0.0, {0, 0, 0});
}

TEST(ScaleTest, Float32ComputedInDouble) {
  const float x[] = {9.0f};
  float out[1];
  scale(out, x, 1, HVD_FLOAT32, 0.1);
  EXPECT_EQ(out[0], 0x1.ccccccp-1f);  // 9 * 0.1f in float would give 0x1.cccccep-1
}

TEST(ScaleTest, HalfRounding) {
  // 0x3C01 * 0.5 is exact; 2^-24 * 0.5 ties to 0; 3 * 2^-24 * 0.5 ties to 2 * 2^-24.
  expect_scale<uint16_t>(HVD_FLOAT16, {0x3C01, 0x0001, 0x0003}, 0.5, {0x3801, 0x0000, 0x0002});
  expect_scale<uint16_t>(HVD_FLOAT16, {0x7BFF}, 2.0, {0x7C00});  // 65504 * 2 overflows
  // bfloat16 1.0078125 * 1.5 = 1.51171875, halfway between 0x3FC1 and 0x3FC2: to even.
  expect_scale<uint16_t>(HVD_BFLOAT16, {0x3F81}, 1.5, {0x3FC2});
}

void ref_divide(int32_t dtype, int64_t d, const uint8_t* x, uint8_t* out) {
  auto ints = [&](auto t) {  // C division truncates toward zero
    put(out, static_cast<decltype(t)>(static_cast<int64_t>(load<decltype(t)>(x)) / d));
  };
  if (visit_int(dtype, ints)) return;
  // Quotients of two floats rounded in double first are still correctly rounded floats.
  if (dtype == HVD_FLOAT32) put(out, static_cast<float>(load<float>(x) / double{float(d)}));
  if (dtype == HVD_FLOAT64) put(out, load<double>(x) / static_cast<double>(d));
  if (dtype == HVD_BOOL) *out = *x;
  if (dtype == HVD_FLOAT16 || dtype == HVD_BFLOAT16) {
    const double q = ref_decode(load<uint16_t>(x), fmt_of(dtype)) / double{float(d)};
    put(out, ref_encode(static_cast<float>(q), fmt_of(dtype)));
  }
}

TEST(DivideTest, AllDtypesRandom) {
  Rng rng(31);
  const int64_t divisors[] = {1,   2,    3,     7,         8,         100,
                              300, 1000, 65537, 1LL << 31, 1LL << 40, INT64_MAX};
  for (int32_t dtype : kAllDtypes) {
    for (int64_t d : divisors) {
      check_map(
          dtype, "divisor=" + std::to_string(d), rng,
          [&](const uint8_t* x, uint8_t* out) { ref_divide(dtype, d, x, out); },
          [&](void* dst, const void* src, size_t n) {
            if (dst != src) std::memcpy(dst, src, n * dtype_size(dtype));
            divide(dst, n, dtype, d);
          });
    }
  }
}

TEST(DivideTest, TruncatesTowardZero) {
  expect_divide<int32_t>(HVD_INT32, {-7, 7, -1, INT32_MIN, INT32_MAX, -6}, 2,
                         {-3, 3, 0, INT32_MIN / 2, INT32_MAX / 2, -3});
  expect_divide<int8_t>(HVD_INT8, {-128, -7, 127}, 3, {-42, -2, 42});
  expect_divide<int64_t>(HVD_INT64, {INT64_MIN, -9, INT64_MAX}, 4,
                         {INT64_MIN / 4, -2, INT64_MAX / 4});
  expect_divide<uint8_t>(HVD_UINT8, {255, 1}, 1000, {0, 0});
  expect_divide<uint8_t>(HVD_BOOL, {0, 1}, 2, {0, 1});
}

TEST(DivideTest, HalfRounding) {
  // 1/3 in float is 0x3EAAAAAB, which rounds to 0x3555; 2^-24 / 2 ties to 0; 3 * 2^-24 / 2 ties
  // to 2 * 2^-24.
  expect_divide<uint16_t>(HVD_FLOAT16, {0x3C00, 0xBC00}, 3, {0x3555, 0xB555});
  expect_divide<uint16_t>(HVD_FLOAT16, {0x0001, 0x0003}, 2, {0x0000, 0x0002});
}

// ---- throughput --------------------------------------------------------------------------------

double reduce_gbps(int32_t dtype, int32_t op) {
  const size_t bytes = 8u << 20;
  const size_t n = bytes / dtype_size(dtype);
  Bytes a(bytes), b(bytes), out(bytes);
  Rng rng(41);
  fill_random(dtype, a.data(), n, rng);
  fill_random(dtype, b.data(), n, rng);
  reduce(out.data(), a.data(), b.data(), n, dtype, op);  // warm up, fault the pages in
  const auto start = std::chrono::steady_clock::now();
  int iters = 0;
  double secs = 0;
  do {
    reduce(out.data(), a.data(), b.data(), n, dtype, op);
    ++iters;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (secs < 0.3);
  return 3.0 * bytes * iters / secs / 1e9;  // two reads and one write per element
}

TEST(ReduceThroughput, Report) {
  for (int32_t dtype : {HVD_FLOAT32, HVD_BFLOAT16, HVD_FLOAT16}) {
    std::printf("[ INFO ] reduce %s sum: %.1f GB/s\n", dtype_name(dtype),
                reduce_gbps(dtype, HVD_OP_SUM));
  }
}

}  // namespace
