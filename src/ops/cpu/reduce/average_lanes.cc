#include "ops/cpu/reduce/average_lanes.h"

#include "hvdc.h"

namespace hvdc::ops::cpu {
namespace {

template <class T>
void widen_one_lane(int64_t* wide, const void* src, size_t count) {
  const T* s = static_cast<const T*>(src);
  for (size_t i = 0; i < count; ++i) wide[i] = s[i];
}

// The quotient of the exact sum fits in int64 and T: truncating it is C's division.
template <class T>
void narrow_one_lane(void* dst, const int64_t* wide, size_t count, int64_t divisor) {
  T* d = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) d[i] = static_cast<T>(wide[i] / divisor);
}

void widen_int64(int64_t* wide, const void* src, size_t count, int64_t n) {
  const int64_t* s = static_cast<const int64_t*>(src);
  for (size_t i = 0; i < count; ++i) {
    int64_t q = s[i] / n, r = s[i] % n;  // truncated: r has the sign of s[i]
    if (r < 0) {
      q -= 1;
      r += n;
    }
    wide[2 * i] = q;
    wide[2 * i + 1] = r;
  }
}

// floor(sum / n) = Q + R / n with Q = sum(q) (wrapped) and R = sum(r) >= 0 (exact). The floor is
// in range, so the wrapped addition gives it exactly; a negative inexact quotient then rounds up
// to truncate toward zero (the sum is negative exactly when its floor is).
void narrow_int64(void* dst, const int64_t* wide, size_t count, int64_t n) {
  int64_t* d = static_cast<int64_t*>(dst);
  for (size_t i = 0; i < count; ++i) {
    const int64_t big = wide[2 * i], rems = wide[2 * i + 1];
    const int64_t floor =
        static_cast<int64_t>(static_cast<uint64_t>(big) + static_cast<uint64_t>(rems / n));
    d[i] = floor + (floor < 0 && rems % n != 0 ? 1 : 0);
  }
}

}  // namespace

bool needs_average_lanes(int32_t dtype, int32_t op, int64_t divisor) {
  return op == HVD_OP_AVERAGE && divisor > 1 && dtype >= HVD_UINT8 && dtype <= HVD_INT64;
}

size_t average_lanes(int32_t dtype) {
  return dtype == HVD_INT64 ? 2 : 1;
}

void widen_for_average(int64_t* wide, const void* src, size_t count, int32_t dtype,
                       int64_t divisor) {
  switch (dtype) {
    case HVD_UINT8:
      return widen_one_lane<uint8_t>(wide, src, count);
    case HVD_INT8:
      return widen_one_lane<int8_t>(wide, src, count);
    case HVD_UINT16:
      return widen_one_lane<uint16_t>(wide, src, count);
    case HVD_INT16:
      return widen_one_lane<int16_t>(wide, src, count);
    case HVD_INT32:
      return widen_one_lane<int32_t>(wide, src, count);
    case HVD_INT64:
      return widen_int64(wide, src, count, divisor);
    default:
      return;
  }
}

void narrow_average(void* dst, const int64_t* wide, size_t count, int32_t dtype, int64_t divisor) {
  switch (dtype) {
    case HVD_UINT8:
      return narrow_one_lane<uint8_t>(dst, wide, count, divisor);
    case HVD_INT8:
      return narrow_one_lane<int8_t>(dst, wide, count, divisor);
    case HVD_UINT16:
      return narrow_one_lane<uint16_t>(dst, wide, count, divisor);
    case HVD_INT16:
      return narrow_one_lane<int16_t>(dst, wide, count, divisor);
    case HVD_INT32:
      return narrow_one_lane<int32_t>(dst, wide, count, divisor);
    case HVD_INT64:
      return narrow_int64(dst, wide, count, divisor);
    default:
      return;
  }
}

}  // namespace hvdc::ops::cpu
