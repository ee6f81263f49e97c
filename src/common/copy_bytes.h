// copy_bytes: memcpy for the data path, without the case where glibc's memcpy is 30x slow.
// glibc (2.36, Debian 12) moves blocks from about 2 KiB up to the L2 size with `rep movsb`, and
// on AMD Zen that instruction runs at about 1.5 GB/s instead of 45 when the destination lies 1
// to 63 bytes past the source modulo 4 KiB. It is the common case, not a corner: malloc puts
// a large block 16 bytes into its page, so copying into it from page-aligned memory (a stage,
// a mapped peer buffer) hits it (docs/performance.md, "memcpy's slow case on AMD Zen").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hvdc::common {

// The vector loop behind copy_bytes for the slow case.
void copy_blocks(void* dst, const void* src, size_t bytes);

// Whether memcpy(dst, src, bytes) would take the slow case above.
inline bool copy_is_slow(const void* dst, const void* src, size_t bytes) {
  constexpr size_t kRepMovsbMin = 2048;  // below this glibc copies with vector moves
  const uintptr_t distance =
      (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) % 4096;
  return bytes >= kRepMovsbMin && distance != 0 && distance < 64;
}

// Copies bytes from src to dst (which must not overlap), as memcpy does.
inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (copy_is_slow(dst, src, bytes)) {
    copy_blocks(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

// memmove for the data path: copy_bytes where the ranges do not overlap.
inline void move_bytes(void* dst, const void* src, size_t bytes) {
  const char* d = static_cast<const char*>(dst);
  const char* s = static_cast<const char*>(src);
  if (d + bytes <= s || s + bytes <= d) {
    copy_bytes(dst, src, bytes);
  } else {
    std::memmove(dst, src, bytes);
  }
}

}  // namespace hvdc::common
