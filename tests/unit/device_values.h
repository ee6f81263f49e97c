// Typed access to test buffers of any hvdc dtype through doubles, and the independent sequential
// references the device backend's results are checked against (nothing here calls hvdc).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/dtype.h"
#include "hvdc.h"
#include "kernel_reference.h"

namespace device_test {

inline double get(int32_t dtype, const void* buf, size_t i) {
  const auto* p = static_cast<const uint8_t*>(buf) + i * hvdc::common::dtype_size(dtype);
  using kernel_test::load;
  switch (dtype) {
    case HVD_UINT8:
      return load<uint8_t>(p);
    case HVD_INT8:
      return load<int8_t>(p);
    case HVD_UINT16:
      return load<uint16_t>(p);
    case HVD_INT16:
      return load<int16_t>(p);
    case HVD_INT32:
      return load<int32_t>(p);
    case HVD_INT64:
      return static_cast<double>(load<int64_t>(p));
    case HVD_FLOAT16:
      return kernel_test::ref_decode(load<uint16_t>(p), kernel_test::kHalf);
    case HVD_BFLOAT16:
      return kernel_test::ref_decode(load<uint16_t>(p), kernel_test::kBf16);
    case HVD_FLOAT32:
      return load<float>(p);
    case HVD_FLOAT64:
      return load<double>(p);
    case HVD_BOOL:
      return load<uint8_t>(p) != 0 ? 1 : 0;
  }
  return NAN;
}

// Integers wrap (the value is taken modulo 2^bits); 16-bit floats round to nearest even.
inline void put(int32_t dtype, void* buf, size_t i, double v) {
  auto* p = static_cast<uint8_t*>(buf) + i * hvdc::common::dtype_size(dtype);
  using kernel_test::put;
  const auto w = static_cast<uint64_t>(static_cast<int64_t>(v));
  switch (dtype) {
    case HVD_UINT8:
    case HVD_INT8:
      put<uint8_t>(p, static_cast<uint8_t>(w));
      break;
    case HVD_UINT16:
    case HVD_INT16:
      put<uint16_t>(p, static_cast<uint16_t>(w));
      break;
    case HVD_INT32:
      put<uint32_t>(p, static_cast<uint32_t>(w));
      break;
    case HVD_INT64:
      put<uint64_t>(p, w);
      break;
    case HVD_FLOAT16:
      put<uint16_t>(p, kernel_test::ref_encode(v, kernel_test::kHalf));
      break;
    case HVD_BFLOAT16:
      put<uint16_t>(p, kernel_test::ref_encode(v, kernel_test::kBf16));
      break;
    case HVD_FLOAT32:
      put<float>(p, static_cast<float>(v));
      break;
    case HVD_FLOAT64:
      put<double>(p, v);
      break;
    case HVD_BOOL:
      put<uint8_t>(p, v != 0 ? 1 : 0);
      break;
  }
}

// Rank r's element i: small values, so that sums and products are exact in every dtype.
inline double value(int32_t dtype, int r, size_t i) {
  const int64_t k = (r * 7 + static_cast<int64_t>(i) * 3) % 11;
  if (dtype == HVD_BOOL) return (r + i) % 3 != 0 ? 1 : 0;
  if (dtype == HVD_UINT8 || dtype == HVD_UINT16) return static_cast<double>(k % 6);
  if (hvdc::common::dtype_is_float(dtype)) return static_cast<double>(k - 5) + 0.5;
  return static_cast<double>(k % 6 - 2);
}

inline std::vector<uint8_t> tensor(int32_t dtype, int r, size_t count, size_t skew = 0) {
  std::vector<uint8_t> out(count * hvdc::common::dtype_size(dtype) + 1);
  for (size_t i = 0; i < count; ++i) put(dtype, out.data(), i, value(dtype, r, i + skew));
  return out;
}

// hvdc's integer result of an exact value: wrapped to the dtype.
inline double wrap(int32_t dtype, double v) {
  uint8_t buf[8];
  put(dtype, buf, 0, v);
  return get(dtype, buf, 0);
}

// The reduction of element i over n ranks (each rank's value times prescale), then postscale.
inline double reference(int32_t dtype, int32_t op, int n, size_t i, double pre = 1, double post = 1,
                        size_t skew = 0) {
  const bool fl = hvdc::common::dtype_is_float(dtype);
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    const double v = value(dtype, r, i + skew) * pre;
    if (r == 0) {
      acc = v;
      continue;
    }
    switch (op) {
      case HVD_OP_SUM:
      case HVD_OP_AVERAGE:
        acc += v;
        break;
      case HVD_OP_MIN:
        acc = std::min(acc, v);
        break;
      case HVD_OP_MAX:
        acc = std::max(acc, v);
        break;
      case HVD_OP_PRODUCT:
        acc *= v;
        break;
    }
  }
  if (dtype == HVD_BOOL) acc = acc != 0 ? 1 : 0;
  if (op == HVD_OP_AVERAGE) acc = fl ? acc / n : std::trunc(acc / n);
  if (!fl && dtype != HVD_BOOL) acc = wrap(dtype, acc);
  return acc * post;
}

inline bool close(int32_t dtype, double got, double want, int n) {
  if (!hvdc::common::dtype_is_float(dtype)) return got == want;
  const double rel = dtype == HVD_BFLOAT16 ? 2e-2 : dtype == HVD_FLOAT16 ? 4e-3 : 1e-5;
  return std::fabs(got - want) <= rel * n * std::max(1.0, std::fabs(want));
}

}  // namespace device_test
