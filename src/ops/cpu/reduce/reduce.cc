// reduce(): element-wise combine of two buffers.
//
// Layout of the code: a Codec maps a storage type to the type the arithmetic runs in (float16 and
// bfloat16 widen to float), an Op combines two compute values, and one cloned template per
// (Codec, Op) runs the loop. Everything under the clone is always_inline so that each target
// clone gets its own vectorised copy of the whole loop. float16 instead converts whole blocks
// with F16C, dispatched by hand on the ISA level (see half.h).
#include "ops/cpu/reduce/reduce.h"

#include <type_traits>

#include "hvdc.h"
#include "ops/cpu/reduce/clones.h"
#include "ops/cpu/reduce/half.h"

#define HVDC_INLINE inline __attribute__((always_inline))
// No operation here is a multiply feeding an add (see clones.h).

namespace hvdc::ops::cpu {
namespace {

// A fixed inner trip count lets GCC's -O2 "very cheap" vectoriser (which will not emit a scalar
// epilogue for an unknown count) vectorise the block loop; the tail runs scalar.
constexpr size_t kBlock = 64;

template <class T>
struct Plain {
  using S = T;
  using C = T;
  static HVDC_INLINE C load(S x) { return x; }
  static HVDC_INLINE S store(C x) { return x; }
};

template <class F>
using BitsOf = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;

// Integer arithmetic runs in an unsigned type at least as wide as unsigned int, so that wrapping
// is defined (uint16 * uint16 would otherwise promote to a signed int and overflow).
template <class T>
using WrapOf = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

struct Sum {
  template <class C>
  static HVDC_INLINE C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(static_cast<WrapOf<C>>(a) + static_cast<WrapOf<C>>(b));
    } else {
      return a + b;
    }
  }
};

struct Product {
  template <class C>
  static HVDC_INLINE C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(static_cast<WrapOf<C>>(a) * static_cast<WrapOf<C>>(b));
    } else {
      return a * b;
    }
  }
};

// The ordered result r unless a or b is NaN, then a + b (a quiet NaN). The sum is computed
// unconditionally and picked with a mask: a ?: around it would become a branch under
// -ftrapping-math and stop vectorisation.
template <class C>
HVDC_INLINE C float_pick(C a, C b, BitsOf<C> r) {
  using I = BitsOf<C>;
  const I nan = __builtin_bit_cast(I, a + b);
  const I m = I{0} - static_cast<I>(__builtin_isunordered(a, b));
  return __builtin_bit_cast(C, (nan & m) | (r & ~m));
}

// Floating min/max are IEEE 754-2019 minimum/maximum, which is symmetric in its operands: any NaN
// wins (a + b turns it into a quiet NaN), and of two equal values only +-0 differ in their bits,
// where OR of the bits picks -0 for min and AND picks +0 for max.
struct Min {
  template <class C>
  static HVDC_INLINE C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return b < a ? b : a;
    } else {
      const auto ia = __builtin_bit_cast(BitsOf<C>, a);
      const auto ib = __builtin_bit_cast(BitsOf<C>, b);
      return float_pick(a, b, a == b ? (ia | ib) : (a < b ? ia : ib));
    }
  }
};

struct Max {
  template <class C>
  static HVDC_INLINE C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return a < b ? b : a;
    } else {
      const auto ia = __builtin_bit_cast(BitsOf<C>, a);
      const auto ib = __builtin_bit_cast(BitsOf<C>, b);
      return float_pick(a, b, a == b ? (ia & ib) : (a < b ? ib : ia));
    }
  }
};

// Bool bytes: any nonzero value is true; the output is normalised to 0 / 1.
struct Or {
  static HVDC_INLINE uint8_t apply(uint8_t a, uint8_t b) { return (a | b) != 0; }
};

struct And {
  static HVDC_INLINE uint8_t apply(uint8_t a, uint8_t b) { return (a != 0) & (b != 0); }
};

template <class K, class Op>
HVDC_INLINE typename K::S combine(typename K::S a, typename K::S b) {
  return K::store(Op::apply(K::load(a), K::load(b)));
}

template <class K, class Op>
HVDC_INLINE void loop_distinct(typename K::S* __restrict d, const typename K::S* __restrict a,
                               const typename K::S* __restrict b, size_t n) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) d[i + j] = combine<K, Op>(a[i + j], b[i + j]);
  }
  for (; i < n; ++i) d[i] = combine<K, Op>(a[i], b[i]);
}

// In place into one operand; kSwap keeps the operand order when the output is b.
template <class K, class Op, bool kSwap>
HVDC_INLINE void loop_into(typename K::S* __restrict x, const typename K::S* __restrict y,
                           size_t n) {
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    typename K::S* __restrict xb = x + i;
    const typename K::S* __restrict yb = y + i;
    for (size_t j = 0; j < kBlock; ++j) {
      xb[j] = kSwap ? combine<K, Op>(yb[j], xb[j]) : combine<K, Op>(xb[j], yb[j]);
    }
  }
  for (; i < n; ++i) x[i] = kSwap ? combine<K, Op>(y[i], x[i]) : combine<K, Op>(x[i], y[i]);
}

// dst == a == b: a single pointer, so no restrict promise is broken.
template <class K, class Op>
HVDC_INLINE void loop_self(typename K::S* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = combine<K, Op>(x[i], x[i]);
}

template <class K, class Op>
HVDC_INLINE void reduce_body(void* dst, const void* a, const void* b, size_t n) {
  using S = typename K::S;
  S* d = static_cast<S*>(dst);
  const S* sa = static_cast<const S*>(a);
  const S* sb = static_cast<const S*>(b);
  if (dst == a && dst == b) {
    loop_self<K, Op>(d, n);
  } else if (dst == a) {
    loop_into<K, Op, false>(d, sb, n);
  } else if (dst == b) {
    loop_into<K, Op, true>(d, sa, n);
  } else {
    loop_distinct<K, Op>(d, sa, sb, n);
  }
}

template <class K, class Op>
HVDC_CLONES void reduce_loop(void* dst, const void* a, const void* b, size_t n) {
  reduce_body<K, Op>(dst, a, b, n);
}

// float16 goes through float scratch blocks (see half.h). Both inputs of a block are read in
// full before that block of dst is written, so exact aliasing of dst needs no special case.
template <class Cvt, class Op>
HVDC_INLINE void half_blocks(void* dst, const void* a, const void* b, size_t n) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  alignas(64) float fx[kHalfBlock];
  alignas(64) float fy[kHalfBlock];
  size_t i = 0;
  for (; i + kHalfBlock <= n; i += kHalfBlock) {
    Cvt::widen(x + i, fx);
    Cvt::widen(y + i, fy);
    for (size_t j = 0; j < kHalfBlock; ++j) fx[j] = Op::apply(fx[j], fy[j]);
    Cvt::narrow(fx, d + i);
  }
  for (; i < n; ++i) d[i] = combine<HalfCodec, Op>(x[i], y[i]);
}

template <class Op>
__attribute__((target("arch=x86-64-v4"))) void half_v4(void* d, const void* a, const void* b,
                                                       size_t n) {
  half_blocks<HalfBlockV4, Op>(d, a, b, n);
}

template <class Op>
__attribute__((target("arch=x86-64-v3"))) void half_v3(void* d, const void* a, const void* b,
                                                       size_t n) {
  half_blocks<HalfBlockV3, Op>(d, a, b, n);
}

template <class Op>
void half_baseline(void* d, const void* a, const void* b, size_t n) {
  half_blocks<HalfBlockBaseline, Op>(d, a, b, n);
}

// Runners pick the loop for a storage type; reduce_numeric picks the Op.
template <class K>
struct ClonedRunner {
  template <class Op>
  static void run(void* d, const void* a, const void* b, size_t n) {
    reduce_loop<K, Op>(d, a, b, n);
  }
};

struct HalfRunner {
  template <class Op>
  static void run(void* d, const void* a, const void* b, size_t n) {
    switch (isa_level()) {
      case IsaLevel::kV4:
        return half_v4<Op>(d, a, b, n);
      case IsaLevel::kV3:
        return half_v3<Op>(d, a, b, n);
      default:
        return half_baseline<Op>(d, a, b, n);
    }
  }
};

// Calls fn(Op{}) with the Op of a numeric reduction (AVERAGE reduces like SUM).
template <class Fn>
void with_op(int32_t op, Fn fn) {
  switch (op) {
    case HVD_OP_MIN:
      return fn(Min{});
    case HVD_OP_MAX:
      return fn(Max{});
    case HVD_OP_PRODUCT:
      return fn(Product{});
    default:
      return fn(Sum{});  // SUM and AVERAGE
  }
}

// The same for bool bytes: PRODUCT and MIN are AND; SUM, MAX and AVERAGE are OR.
template <class Fn>
void with_bool_op(int32_t op, Fn fn) {
  if (op == HVD_OP_PRODUCT || op == HVD_OP_MIN) return fn(And{});
  fn(Or{});
}

template <class Runner>
void reduce_numeric(void* dst, const void* a, const void* b, size_t n, int32_t op) {
  with_op(op, [&](auto o) { Runner::template run<decltype(o)>(dst, a, b, n); });
}

void reduce_bool(void* dst, const void* a, const void* b, size_t n, int32_t op) {
  with_bool_op(op, [&](auto o) { reduce_loop<Plain<uint8_t>, decltype(o)>(dst, a, b, n); });
}

// Both operands take the result: two stores per element, one pass over memory.
template <class K, class Op>
HVDC_CLONES void both_loop(void* x, void* y, size_t n) {
  using S = typename K::S;
  S* __restrict a = static_cast<S*>(x);
  S* __restrict b = static_cast<S*>(y);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) {
      const S v = combine<K, Op>(a[i + j], b[i + j]);
      a[i + j] = v;
      b[i + j] = v;
    }
  }
  for (; i < n; ++i) {
    const S v = combine<K, Op>(a[i], b[i]);
    a[i] = v;
    b[i] = v;
  }
}

// Calls fn(K{}) with the codec K of dtype's elements and returns true, for every dtype whose
// loop is one cloned template per codec; false for float16, bool and unknown values.
template <class Fn>
bool with_codec(int32_t dtype, Fn fn) {
  switch (dtype) {
    case HVD_UINT8:
      return fn(Plain<uint8_t>{}), true;
    case HVD_INT8:
      return fn(Plain<int8_t>{}), true;
    case HVD_UINT16:
      return fn(Plain<uint16_t>{}), true;
    case HVD_INT16:
      return fn(Plain<int16_t>{}), true;
    case HVD_INT32:
      return fn(Plain<int32_t>{}), true;
    case HVD_INT64:
      return fn(Plain<int64_t>{}), true;
    case HVD_FLOAT32:
      return fn(Plain<float>{}), true;
    case HVD_FLOAT64:
      return fn(Plain<double>{}), true;
    case HVD_BFLOAT16:
      return fn(Bf16Codec{}), true;
    default:
      return false;
  }
}

}  // namespace

bool reduce_into_both(void* x, void* y, size_t count, int32_t dtype, int32_t op) {
  if (dtype == HVD_BOOL) {
    with_bool_op(op, [&](auto o) { both_loop<Plain<uint8_t>, decltype(o)>(x, y, count); });
    return true;
  }
  return with_codec(dtype, [&](auto codec) {
    with_op(op, [&](auto o) { both_loop<decltype(codec), decltype(o)>(x, y, count); });
  });  // float16 and unknown values: false
}

void reduce(void* dst, const void* a, const void* b, size_t count, int32_t dtype, int32_t op) {
  if (count == 0) return;
  if (dtype == HVD_FLOAT16) return reduce_numeric<HalfRunner>(dst, a, b, count, op);
  if (dtype == HVD_BOOL) return reduce_bool(dst, a, b, count, op);
  with_codec(dtype, [&](auto codec) {
    reduce_numeric<ClonedRunner<decltype(codec)>>(dst, a, b, count, op);
  });
}

}  // namespace hvdc::ops::cpu
