#include "ops/cpu/local/stream_copy.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "common/copy_steps.h"

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
  common::copy_64_byte_steps(&dst, &src, &bytes,
                             [](__m128i* at, __m128i v) { _mm_stream_si128(at, v); });
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
