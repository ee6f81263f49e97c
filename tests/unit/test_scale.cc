// Tests for the element-wise maps of the CPU reduce kernels (src/ops/cpu/reduce): scale() (pre-
// and postscale factors), divide() (float averages) and the wide lanes of exact integer averages
// (average_lanes.h).
//
// Expectations never come from the code under test: integers against 128-bit arithmetic, floats
// against double, 16-bit floats against the reference encoder of kernel_reference.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "hvdc.h"
#include "kernel_reference.h"
#include "ops/cpu/reduce/average_lanes.h"
#include "ops/cpu/reduce/reduce.h"

namespace {

using namespace kernel_test;
using hvdc::common::dtype_name;
using hvdc::common::dtype_size;
using hvdc::ops::cpu::average_lanes;
using hvdc::ops::cpu::divide;
using hvdc::ops::cpu::narrow_average;
using hvdc::ops::cpu::needs_average_lanes;
using hvdc::ops::cpu::scale;
using hvdc::ops::cpu::widen_for_average;

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

// ---- exact integer averages (average_lanes.h) -----------------------------------------------

template <class T>
using PerRank = std::vector<std::vector<T>>;  // [rank][element]

// What the collectives do, with the sum over ranks done here: widen each rank's values, add the
// lanes (wrapping, as an int64 SUM does), narrow once.
template <class T>
std::vector<T> average_through_lanes(int32_t dtype, const PerRank<T>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  const size_t count = x[0].size(), lanes = average_lanes(dtype);
  std::vector<int64_t> sum(count * lanes, 0), wide(count * lanes);
  for (const std::vector<T>& mine : x) {
    widen_for_average(wide.data(), mine.data(), count, dtype, n);
    for (size_t i = 0; i < sum.size(); ++i) {
      sum[i] = static_cast<int64_t>(static_cast<uint64_t>(sum[i]) + static_cast<uint64_t>(wide[i]));
    }
  }
  std::vector<T> out(count);
  narrow_average(out.data(), sum.data(), count, dtype, n);
  return out;
}

// The exact sum in 128 bits divided with C's truncation toward zero.
template <class T>
T ref_average(const PerRank<T>& x, size_t i) {
  __int128 sum = 0;
  for (const std::vector<T>& mine : x) sum += mine[i];
  return static_cast<T>(sum / static_cast<__int128>(x.size()));
}

template <class T>
void expect_average(int32_t dtype, const std::vector<T>& per_rank_values, const T want) {
  PerRank<T> x;
  for (T v : per_rank_values) x.push_back({v});
  EXPECT_EQ(+average_through_lanes(dtype, x)[0], +want)
      << dtype_name(dtype) << " over " << x.size() << " ranks";
  EXPECT_EQ(+ref_average(x, 0), +want) << "the test's own reference";
}

TEST(AverageLanesTest, OnlyIntegerAveragesOverSeveralRanks) {
  for (int32_t dtype : kAllDtypes) {
    const bool integer = dtype <= HVD_INT64;
    EXPECT_EQ(needs_average_lanes(dtype, HVD_OP_AVERAGE, 3), integer) << dtype_name(dtype);
    EXPECT_FALSE(needs_average_lanes(dtype, HVD_OP_AVERAGE, 1)) << dtype_name(dtype);
    EXPECT_FALSE(needs_average_lanes(dtype, HVD_OP_SUM, 3)) << dtype_name(dtype);
  }
}

TEST(AverageLanesTest, SumsThatWouldWrap) {
  expect_average<int8_t>(HVD_INT8, {100, 100, 100}, 100);            // the wrapped sum gives 14
  expect_average<int8_t>(HVD_INT8, {100, 100, 100, 100, 100}, 100);  // and -2 here
  expect_average<int8_t>(HVD_INT8, {-128, -128, -128}, -128);
  expect_average<int8_t>(HVD_INT8, {-128, -127}, -127);  // -127.5 truncates up
  expect_average<int8_t>(HVD_INT8, {127, -128, -1}, 0);  // -2 / 3
  expect_average<int8_t>(HVD_INT8, {127, 127, -7}, 82);  // 247 / 3
  expect_average<uint8_t>(HVD_UINT8, {255, 255, 255}, 255);
  expect_average<uint8_t>(HVD_UINT8, {255, 254, 0, 1}, 127);  // 510 / 4
  expect_average<uint16_t>(HVD_UINT16, {65535, 65535, 65534}, 65534);
  expect_average<int16_t>(HVD_INT16, {-32768, 32767, -32768}, -10923);  // -32769 / 3
  expect_average<int32_t>(HVD_INT32, {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX}, INT32_MAX);
  expect_average<int32_t>(HVD_INT32, {INT32_MIN, INT32_MIN, INT32_MAX}, -715827883);
}

TEST(AverageLanesTest, Int64NearItsLimits) {
  const int64_t lo = INT64_MIN, hi = INT64_MAX;
  expect_average<int64_t>(HVD_INT64, {hi, hi, hi}, hi);
  expect_average<int64_t>(HVD_INT64, {lo, lo, lo}, lo);
  expect_average<int64_t>(HVD_INT64, {lo, lo, lo, lo, lo}, lo);
  expect_average<int64_t>(HVD_INT64, {lo, hi, -1}, 0);                    // -2 / 3
  expect_average<int64_t>(HVD_INT64, {lo, lo, 1}, -6148914691236517205);  // (1 - 2^64) / 3
  expect_average<int64_t>(HVD_INT64, {hi, hi - 1}, hi - 1);               // .5 truncates down
  expect_average<int64_t>(HVD_INT64, {lo, lo + 1}, lo + 1);               // -.5 truncates up
  expect_average<int64_t>(HVD_INT64, {-7, 0}, -3);
  expect_average<int64_t>(HVD_INT64, {-9, 0, 0}, -3);  // exact: no rounding up
}

// Random values with every edge of each type, over 2..64 ranks, against 128-bit arithmetic.
TEST(AverageLanesTest, AllIntegerDtypesRandom) {
  Rng rng(51);
  for (int32_t dtype : kAllDtypes) {
    visit_int(dtype, [&](auto t) {
      using T = decltype(t);
      for (size_t ranks : {2, 3, 4, 5, 7, 64}) {
        const size_t count = 1000;
        PerRank<T> x(ranks, std::vector<T>(count));
        for (std::vector<T>& mine : x) {
          fill_random(dtype, reinterpret_cast<uint8_t*>(mine.data()), count, rng);
        }
        const std::vector<T> got = average_through_lanes(dtype, x);
        int failures = 0;
        for (size_t i = 0; i < count && failures < 5; ++i) {
          if (got[i] == ref_average(x, i)) continue;
          ++failures;
          ADD_FAILURE() << dtype_name(dtype) << " over " << ranks << " ranks, element " << i
                        << ": got " << +got[i] << ", want " << +ref_average(x, i);
        }
      }
    });
  }
}

}  // namespace
