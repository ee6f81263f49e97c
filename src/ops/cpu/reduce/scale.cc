// scale() and divide(): element-wise maps used for pre/post-scaling and for AVERAGE.
//
// Each dtype gets a small functor; one cloned template runs any functor over a buffer, so every
// target clone holds its own vectorised copy of the loop (everything under it is always_inline).
#include <limits>
#include <type_traits>

#include "common/dtype.h"
#include "hvdc.h"
#include "ops/cpu/reduce/clones.h"
#include "ops/cpu/reduce/half.h"
#include "ops/cpu/reduce/reduce.h"

#define HVDC_INLINE inline __attribute__((always_inline))
// x86-64-v4 brings AVX512DQ (double <-> int64 in vectors). The functors never feed a product
// into an add (round_even's fabs sits between them), see clones.h.

namespace hvdc::ops::cpu {
namespace {

// See reduce.cc: a constant inner trip count is what GCC -O2 agrees to vectorise.
constexpr size_t kBlock = 64;

// c ? x : y on the bits of doubles. A ?: whose arms hold float arithmetic becomes a branch under
// the default -ftrapping-math, and the loop around it stops vectorising.
HVDC_INLINE double pick(bool c, double x, double y) {
  const uint64_t m = uint64_t{0} - static_cast<uint64_t>(c);
  const uint64_t r = (__builtin_bit_cast(uint64_t, x) & m) | (__builtin_bit_cast(uint64_t, y) & ~m);
  return __builtin_bit_cast(double, r);
}

// Round to nearest, ties to even, in the default rounding mode: at magnitude 2^52 the spacing of
// doubles is 1, so adding and removing 2^52 rounds exactly once. Larger values are integers.
HVDC_INLINE double round_even(double v) {
  const double a = __builtin_fabs(v);
  const double r = __builtin_copysign((a + 0x1p52) - 0x1p52, v);
  return pick(a < 0x1p52, r, v);
}

// Integral double -> T, saturating; NaN gives 0. The clamp comes first so that the conversion is
// always in range (an out-of-range conversion is undefined and vectorises to garbage).
template <class T>
HVDC_INLINE T saturate(double v) {
  using Conv = std::conditional_t<(sizeof(T) < 8), int32_t, int64_t>;
  constexpr double kLo = static_cast<double>(std::numeric_limits<T>::min());
  // For int64 the maximum is not a double; clamp below 2^63 and patch the top afterwards.
  constexpr double kHi =
      sizeof(T) < 8 ? static_cast<double>(std::numeric_limits<T>::max()) : 0x1.fffffffffffffp62;
  double c = v < kLo ? kLo : v;
  c = c > kHi ? kHi : c;
  c = c == c ? c : 0.0;
  T r = static_cast<T>(static_cast<Conv>(c));
  if constexpr (sizeof(T) == 8) r = v >= 0x1p63 ? std::numeric_limits<T>::max() : r;
  return r;
}

template <class T>
struct ScaleInt {
  using S = T;
  double factor;
  HVDC_INLINE S operator()(S x) const {
    return saturate<T>(round_even(static_cast<double>(x) * factor));
  }
};

template <class K>
struct ScaleWide {
  using S = typename K::S;
  float factor;
  HVDC_INLINE S operator()(S x) const { return K::store(K::load(x) * factor); }
};

struct ScaleF32 {
  using S = float;
  double factor;
  HVDC_INLINE S operator()(S x) const { return static_cast<float>(x * factor); }
};

template <class T>
struct Mul {
  using S = T;
  T factor;
  HVDC_INLINE S operator()(S x) const { return x * factor; }
};

struct ScaleBool {
  using S = uint8_t;
  bool keep;
  HVDC_INLINE S operator()(S x) const { return keep && x != 0; }
};

// int64 has no vector division; the others divide exactly enough in double: for |x| < 2^32 the
// rounded quotient never crosses an integer, so truncating it equals C's integer division.
template <class T>
struct DivInt {
  using S = T;
  double divisor;
  HVDC_INLINE S operator()(S x) const {
    return static_cast<T>(static_cast<int32_t>(static_cast<double>(x) / divisor));
  }
};

struct DivI64 {
  using S = int64_t;
  int64_t divisor;
  HVDC_INLINE S operator()(S x) const { return x / divisor; }
};

template <class K>
struct DivWide {
  using S = typename K::S;
  float divisor;
  HVDC_INLINE S operator()(S x) const { return K::store(K::load(x) / divisor); }
};

template <class T>
struct Div {
  using S = T;
  T divisor;
  HVDC_INLINE S operator()(S x) const { return x / divisor; }
};

template <class Fn>
HVDC_INLINE void map_distinct(typename Fn::S* __restrict d, const typename Fn::S* __restrict s,
                              size_t n, const Fn& fn) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) d[i + j] = fn(s[i + j]);
  }
  for (; i < n; ++i) d[i] = fn(s[i]);
}

// One pointer, so in place needs no restrict promise.
template <class Fn>
HVDC_INLINE void map_inplace(typename Fn::S* x, size_t n, const Fn& fn) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) x[i + j] = fn(x[i + j]);
  }
  for (; i < n; ++i) x[i] = fn(x[i]);
}

template <class Fn>
HVDC_CLONES void map_loop(void* dst, const void* src, size_t n, Fn fn) {
  using S = typename Fn::S;
  if (dst == src) {
    map_inplace(static_cast<S*>(dst), n, fn);
  } else {
    map_distinct(static_cast<S*>(dst), static_cast<const S*>(src), n, fn);
  }
}

// float16: float scratch blocks converted per ISA level (see half.h); fn maps float -> float.
template <class Cvt, class Fn>
HVDC_INLINE void half_blocks(void* dst, const void* src, size_t n, const Fn& fn) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* s = static_cast<const uint16_t*>(src);
  alignas(64) float f[kHalfBlock];
  size_t i = 0;
  for (; i + kHalfBlock <= n; i += kHalfBlock) {
    Cvt::widen(s + i, f);
    for (size_t j = 0; j < kHalfBlock; ++j) f[j] = fn(f[j]);
    Cvt::narrow(f, d + i);
  }
  for (; i < n; ++i) d[i] = HalfCodec::store(fn(HalfCodec::load(s[i])));
}

template <class Fn>
__attribute__((target("arch=x86-64-v4"))) void half_v4(void* d, const void* s, size_t n, Fn fn) {
  half_blocks<HalfBlockV4>(d, s, n, fn);
}

template <class Fn>
__attribute__((target("arch=x86-64-v3"))) void half_v3(void* d, const void* s, size_t n, Fn fn) {
  half_blocks<HalfBlockV3>(d, s, n, fn);
}

template <class Fn>
void half_map(void* d, const void* s, size_t n, Fn fn) {
  switch (isa_level()) {
    case IsaLevel::kV4:
      return half_v4(d, s, n, fn);
    case IsaLevel::kV3:
      return half_v3(d, s, n, fn);
    default:
      return half_blocks<HalfBlockBaseline>(d, s, n, fn);
  }
}

}  // namespace

void scale(void* dst, const void* src, size_t count, int32_t dtype, double factor) {
  if (count == 0) return;
  const float ffactor = static_cast<float>(factor);
  switch (dtype) {
    case HVD_UINT8:
      return map_loop(dst, src, count, ScaleInt<uint8_t>{factor});
    case HVD_INT8:
      return map_loop(dst, src, count, ScaleInt<int8_t>{factor});
    case HVD_UINT16:
      return map_loop(dst, src, count, ScaleInt<uint16_t>{factor});
    case HVD_INT16:
      return map_loop(dst, src, count, ScaleInt<int16_t>{factor});
    case HVD_INT32:
      return map_loop(dst, src, count, ScaleInt<int32_t>{factor});
    case HVD_INT64:
      return map_loop(dst, src, count, ScaleInt<int64_t>{factor});
    case HVD_FLOAT16:
      return half_map(dst, src, count, Mul<float>{ffactor});
    case HVD_FLOAT32:
      return map_loop(dst, src, count, ScaleF32{factor});
    case HVD_FLOAT64:
      return map_loop(dst, src, count, Mul<double>{factor});
    case HVD_BOOL:
      return map_loop(dst, src, count, ScaleBool{factor != 0});
    case HVD_BFLOAT16:
      return map_loop(dst, src, count, ScaleWide<Bf16Codec>{ffactor});
    default:
      return;
  }
}

void divide(void* buf, size_t count, int32_t dtype, int64_t divisor) {
  // x / 1 is x for integers; floats still divide so that a signaling NaN comes out quiet.
  if (count == 0 || (divisor == 1 && !hvdc::common::dtype_is_float(dtype))) return;
  const double ddiv = static_cast<double>(divisor);
  const float fdiv = static_cast<float>(divisor);
  switch (dtype) {
    case HVD_UINT8:
      return map_loop(buf, buf, count, DivInt<uint8_t>{ddiv});
    case HVD_INT8:
      return map_loop(buf, buf, count, DivInt<int8_t>{ddiv});
    case HVD_UINT16:
      return map_loop(buf, buf, count, DivInt<uint16_t>{ddiv});
    case HVD_INT16:
      return map_loop(buf, buf, count, DivInt<int16_t>{ddiv});
    case HVD_INT32:
      return map_loop(buf, buf, count, DivInt<int32_t>{ddiv});
    case HVD_INT64:
      return map_loop(buf, buf, count, DivI64{divisor});
    case HVD_FLOAT16:
      return half_map(buf, buf, count, Div<float>{fdiv});
    case HVD_FLOAT32:
      return map_loop(buf, buf, count, Div<float>{fdiv});
    case HVD_FLOAT64:
      return map_loop(buf, buf, count, Div<double>{ddiv});
    case HVD_BFLOAT16:
      return map_loop(buf, buf, count, DivWide<Bf16Codec>{fdiv});
    default:
      return;  // bool: unchanged
  }
}

}  // namespace hvdc::ops::cpu
