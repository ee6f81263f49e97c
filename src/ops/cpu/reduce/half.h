// float <-> float16 / bfloat16 conversions on raw bits, round to nearest even.
//
// Written with integer and float arithmetic plus selects, no branches or _Float16, so that GCC
// vectorises the loops that call them in every target clone (GCC 12 leaves _Float16 conversions
// scalar even where F16C exists). They are always_inline because GCC refuses to inline an
// ordinary function into a caller compiled for a different arch= target, which would leave a
// call in the middle of each vector loop.
//
// Selects over results of float arithmetic are written as bit masks: with GCC's default
// -ftrapping-math such a ?: becomes a branch (the operation is sunk into it) and the loop is no
// longer if-converted or vectorised.
//
// NaN: a NaN stays a NaN with its sign and its leading payload bits, and always comes out quiet.
// Narrowing overflows to infinity; subnormals are converted exactly / rounded correctly.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#define HVDC_HALF_INLINE inline __attribute__((always_inline))

namespace hvdc::ops::cpu {

HVDC_HALF_INLINE uint32_t float_bits(float f) {
  return __builtin_bit_cast(uint32_t, f);
}
HVDC_HALF_INLINE float float_from_bits(uint32_t u) {
  return __builtin_bit_cast(float, u);
}

// c ? x : y without a branch.
HVDC_HALF_INLINE uint32_t bit_select(bool c, uint32_t x, uint32_t y) {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return (x & m) | (y & ~m);
}

HVDC_HALF_INLINE float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu;
  // Exponent bias 15 -> 127: moving the exponent field up by 112 keeps the value exact.
  const uint32_t normal = (em << 13) + (112u << 23);
  const uint32_t special = (em << 13) | 0x7F800000u | (em > 0x7C00u ? 0x00400000u : 0u);
  // A subnormal is m * 2^-24 with m < 1024; int -> float and the scaling are both exact.
  const uint32_t sub = float_bits(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
  const uint32_t mag = bit_select(em >= 0x7C00u, special, bit_select(em >= 0x0400u, normal, sub));
  return float_from_bits(sign | mag);
}

HVDC_HALF_INLINE uint16_t float_to_half(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7FFFFFFFu;
  // Rebias and round the 13 dropped bits; a carry out of the mantissa correctly bumps the
  // exponent (and 65504 + half an ulp rounds to the infinity encoding 0x7C00).
  const uint32_t normal = (a - (112u << 23) + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
  // Below 2^-14, adding 0.5 puts the float16 subnormal step 2^-24 exactly at the last float
  // bit, so the FPU's own round-to-nearest-even does the rounding.
  const uint32_t sub = float_bits(float_from_bits(a) + 0.5f) - 0x3F000000u;
  const uint32_t nan = 0x7E00u | ((a >> 13) & 0x03FFu);
  uint32_t mag = bit_select(a >= 0x38800000u, normal, sub);
  mag = bit_select(a >= 0x477FF000u, 0x7C00u, mag);  // 65520 and above round to infinity
  mag = bit_select(a > 0x7F800000u, nan, mag);
  return static_cast<uint16_t>(sign | mag);
}

HVDC_HALF_INLINE float bf16_to_float(uint16_t h) {
  const uint32_t quiet = (h & 0x7FFFu) > 0x7F80u ? 0x00400000u : 0u;
  return float_from_bits((static_cast<uint32_t>(h) << 16) | quiet);
}

HVDC_HALF_INLINE uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  // Round to nearest even on the low 16 bits; a carry reaches the exponent (and infinity) as it
  // should. Only NaN needs care: its payload could round into the infinity encoding.
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x0040u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

// Codecs for the kernels: S is the stored type, C the type the arithmetic runs in. load() does
// not quiet a signaling NaN: every kernel feeds loaded values into float arithmetic, which
// quiets them anyway, and skipping it makes the bfloat16 loops markedly faster.
struct HalfCodec {
  using S = uint16_t;
  using C = float;
  static HVDC_HALF_INLINE C load(S x) { return half_to_float(x); }
  static HVDC_HALF_INLINE S store(C x) { return float_to_half(x); }
};

struct Bf16Codec {
  using S = uint16_t;
  using C = float;
  static HVDC_HALF_INLINE C load(S x) { return float_from_bits(static_cast<uint32_t>(x) << 16); }
  static HVDC_HALF_INLINE S store(C x) { return float_to_bf16(x); }
};

// ---- float16 in blocks, per x86-64 ISA level ---------------------------------------------------
//
// GCC 12 never vectorises F16C conversions by itself and the bit-level ones above run at a
// quarter of memory speed, so float16 kernels convert whole blocks with vcvtph2ps / vcvtps2ph
// where the CPU has them. All three variants round identically (nearest even, exact for
// subnormals), so a result does not depend on which one ran.

constexpr size_t kHalfBlock = 64;

struct HalfBlockBaseline {
  static HVDC_HALF_INLINE void widen(const uint16_t* s, float* d) {
    for (size_t j = 0; j < kHalfBlock; ++j) d[j] = half_to_float(s[j]);
  }
  static HVDC_HALF_INLINE void narrow(const float* s, uint16_t* d) {
    for (size_t j = 0; j < kHalfBlock; ++j) d[j] = float_to_half(s[j]);
  }
};

// The target matches the callers' exactly (not just "f16c"), so that GCC inlines these into them.
struct HalfBlockV3 {
  __attribute__((target("arch=x86-64-v3"))) static inline void widen(const uint16_t* s, float* d) {
    for (size_t j = 0; j < kHalfBlock; j += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j));
      _mm256_storeu_ps(d + j, _mm256_cvtph_ps(h));
    }
  }
  __attribute__((target("arch=x86-64-v3"))) static inline void narrow(const float* s, uint16_t* d) {
    for (size_t j = 0; j < kHalfBlock; j += 8) {
      const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + j), _MM_FROUND_TO_NEAREST_INT);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j), h);
    }
  }
};

// The maskz forms only dodge a GCC 12 false -Wmaybe-uninitialized in the unmasked intrinsics.
struct HalfBlockV4 {
  static constexpr __mmask16 kAllLanes = 0xFFFF;
  __attribute__((target("arch=x86-64-v4"))) static inline void widen(const uint16_t* s, float* d) {
    for (size_t j = 0; j < kHalfBlock; j += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + j));
      _mm512_storeu_ps(d + j, _mm512_maskz_cvtph_ps(kAllLanes, h));
    }
  }
  __attribute__((target("arch=x86-64-v4"))) static inline void narrow(const float* s, uint16_t* d) {
    for (size_t j = 0; j < kHalfBlock; j += 16) {
      const __m256i h =
          _mm512_maskz_cvtps_ph(kAllLanes, _mm512_loadu_ps(s + j), _MM_FROUND_TO_NEAREST_INT);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + j), h);
    }
  }
};

// The same levels as target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default") picks from.
enum class IsaLevel { kBaseline, kV3, kV4 };

inline IsaLevel isa_level() {
  static const IsaLevel level = [] {
    __builtin_cpu_init();  // in case this first runs from a static constructor
    if (__builtin_cpu_supports("x86-64-v4")) return IsaLevel::kV4;
    if (__builtin_cpu_supports("x86-64-v3")) return IsaLevel::kV3;
    return IsaLevel::kBaseline;
  }();
  return level;
}

}  // namespace hvdc::ops::cpu
