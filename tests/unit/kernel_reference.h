// Shared by the kernel tests (test_reduce.cc, test_scale.cc): typed access to byte buffers, an
// independent reference for the 16-bit floating formats, random data with edge values, and
// element-wise comparison. Nothing here calls the code under test.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "hvdc.h"

namespace kernel_test {

using Bytes = std::vector<uint8_t>;
using Rng = std::mt19937_64;

inline constexpr int32_t kAllDtypes[] = {HVD_UINT8,   HVD_INT8,  HVD_UINT16,  HVD_INT16,
                                         HVD_INT32,   HVD_INT64, HVD_FLOAT16, HVD_FLOAT32,
                                         HVD_FLOAT64, HVD_BOOL,  HVD_BFLOAT16};
inline constexpr int32_t kAllOps[] = {HVD_OP_AVERAGE, HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX,
                                      HVD_OP_PRODUCT};
inline constexpr size_t kSizes[] = {0, 1, 7, 64, 1000, 4099};

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
inline uint32_t fbits(float f) {
  return load<uint32_t>(reinterpret_cast<const uint8_t*>(&f));
}
inline float ffrom(uint32_t u) {
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
inline constexpr Fmt kHalf{10, 5, 15};
inline constexpr Fmt kBf16{7, 8, 127};
inline Fmt fmt_of(int32_t dtype) {
  return dtype == HVD_FLOAT16 ? kHalf : kBf16;
}

double ref_decode(uint16_t h, Fmt f);
// Correctly rounded (nearest, ties to even) encoding of v. NaN gives the canonical quiet NaN.
uint16_t ref_encode(double v, Fmt f);
bool is_nan16(uint16_t h, Fmt f);
bool is_quiet_nan16(uint16_t h, Fmt f);

// ---- Comparison and test data ----------------------------------------------------------------

// Bit equality; a NaN expectation accepts any quiet NaN.
bool same_elem(int32_t dtype, const uint8_t* actual, const uint8_t* expected);
std::string elem_str(int32_t dtype, const uint8_t* p);
// Random values of dtype, with its edge values (limits, zeros, NaNs, subnormals) mixed in.
void fill_random(int32_t dtype, uint8_t* p, size_t n, Rng& rng);
// Compares got with want element by element, reporting the first few differences.
void expect_elems(int32_t dtype, const Bytes& in, const Bytes& got, const Bytes& want, size_t n);

// Explicit cases: T is the element type of dtype.
template <class T>
void expect_values(int32_t dtype, const std::vector<T>& got, const std::vector<T>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(+got[i], +want[i]) << hvdc::common::dtype_name(dtype) << " [" << i << "]";
  }
}

}  // namespace kernel_test
