// copy_distance: memcpy against hvdc's copy_bytes (src/common/copy_bytes.h) by the distance of
// the destination past the source modulo 4 KiB, on buffers that stay in cache. No MPI, no engine:
//   build/bench/copy_distance [--kib N]   (default 128; one line per distance)
// The distances 1-63 are where glibc's `rep movsb` can run an order of magnitude slower; copy_bytes
// takes its own loop there. GB/s = bytes copied per second, best of 5 rounds.
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/copy_bytes.h"

namespace {

template <typename Copy>
double best_gbps(char* dst, const char* src, size_t bytes, Copy copy) {
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const int reps = 100;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) copy(dst, src, bytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (bytes * reps / s / 1e9 > best) best = bytes * reps / s / 1e9;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  size_t kib = 128;
  if (argc == 3 && std::string(argv[1]) == "--kib") kib = std::strtoul(argv[2], nullptr, 10);
  if (argc != 1 && !(argc == 3 && kib > 0)) {
    std::fprintf(stderr, "usage: copy_distance [--kib N]\n");
    return 2;
  }
  const size_t bytes = kib << 10;
  const size_t span = bytes + 2 * 4096;
  // Page-aligned, as an mmap'd stage and a large malloc block's page are.
  void* a = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* b = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED || b == MAP_FAILED) {
    std::perror("copy_distance: mmap");
    return 1;
  }
  std::memset(a, 1, span);
  std::memset(b, 2, span);
  std::printf("# copy_distance: %zu KiB in cache, GB/s by (dst - src) mod 4096\n", kib);
  std::printf("%8s %10s %12s\n", "distance", "memcpy", "copy_bytes");
  for (size_t distance : {0, 1, 8, 16, 32, 48, 63, 64, 128, 2048, 4032, 4080}) {
    const char* src = static_cast<char*>(a) + 4096;
    char* dst = static_cast<char*>(b) + 4096 + distance;
    const double libc =
        best_gbps(dst, src, bytes, [](char* d, const char* s, size_t n) { std::memcpy(d, s, n); });
    const double ours = best_gbps(dst, src, bytes, [](char* d, const char* s, size_t n) {
      hvdc::common::copy_bytes(d, s, n);
    });
    std::printf("%8zu %10.1f %12.1f\n", distance, libc, ours);
  }
  return 0;
}
