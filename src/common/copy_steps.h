// The 64-byte step shared by the data path's own copy loops (copy_bytes' vector loop, the
// non-temporal stream_copy): four unaligned 16-byte loads, then four stores of the caller's
// kind. SSE2 is part of x86-64, so no dispatch is needed; x86-64 only.
#pragma once

#include <cstddef>

#if defined(__x86_64__)
#include <emmintrin.h>

namespace hvdc::common {

// Copies whole 64-byte steps from *src to *dst with store(ptr, value), and advances both
// pointers and *bytes past them; fewer than 64 bytes remain.
template <typename Store>
inline void copy_64_byte_steps(char** dst, const char** src, size_t* bytes, Store store) {
  char* d = *dst;
  const char* s = *src;
  size_t left = *bytes;
  for (; left >= 64; left -= 64, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    store(reinterpret_cast<__m128i*>(d), a);
    store(reinterpret_cast<__m128i*>(d + 16), b);
    store(reinterpret_cast<__m128i*>(d + 32), c);
    store(reinterpret_cast<__m128i*>(d + 48), e);
  }
  *dst = d;
  *src = s;
  *bytes = left;
}

}  // namespace hvdc::common

#endif
