#include "ops/cpu/local/stream_copy.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace hvdc::ops::cpu::local {

#if defined(__x86_64__)

void stream_copy(char* dst, const char* src, size_t bytes) {
  // Up to the first 16-byte boundary of dst normally, then 64 bytes a step (a cache line), the
  // tail normally. SSE2 is part of x86-64, so no dispatch is needed.
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
  }
  std::memcpy(dst, src, bytes);
}

void stream_fence() {
  _mm_sfence();
}

#else

void stream_copy(char* dst, const char* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

void stream_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

#endif

}  // namespace hvdc::ops::cpu::local
