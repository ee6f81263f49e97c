// reduce_kernels: throughput of the host reduce kernel (src/ops/cpu/reduce) on one core, for the
// dtypes whose kernels are vectorised by hand or by target clones. No MPI, no engine:
//   build/bench/reduce_kernels [--mib N] [--seconds S]
// Prints GB/s per dtype as (two reads + one write) bytes per second over buffers of N MiB
// (default 8: in the last-level cache on most machines; 256 measures memory instead).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "hvdc.h"
#include "ops/cpu/reduce/reduce.h"

namespace {

struct Options {
  size_t mib = 8;
  double seconds = 0.3;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--help" || a == "-h") return false;
    if (v == nullptr) {
      std::fprintf(stderr, "reduce_kernels: %s needs a value\n", a.c_str());
      return false;
    }
    char* end = nullptr;
    if (a == "--mib") {
      o->mib = std::strtoul(v, &end, 10);
    } else if (a == "--seconds") {
      o->seconds = std::strtod(v, &end);
    } else {
      std::fprintf(stderr, "reduce_kernels: unknown option '%s'\n", a.c_str());
      return false;
    }
    if (end == v || *end != '\0' || o->mib == 0 || !(o->seconds > 0)) {
      std::fprintf(stderr, "reduce_kernels: bad value '%s' for %s\n", v, a.c_str());
      return false;
    }
    ++i;
  }
  return true;
}

// Bit patterns of ordinary values of the dtype (small exponents, no NaNs), so that no input
// takes a slow path of the FPU.
void fill(std::vector<char>& buf, int32_t dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const size_t esize = hvdc::common::dtype_size(dtype);
  for (size_t i = 0; i + esize <= buf.size(); i += esize) {
    const float f = static_cast<float>(rng() % 2001) / 1000.0f - 1.0f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (esize == 4) std::memcpy(&buf[i], &f, 4);
    if (esize == 2) {
      const _Float16 h = static_cast<_Float16>(f);
      const uint16_t top = static_cast<uint16_t>(bits >> 16);  // bfloat16 by truncation
      std::memcpy(&buf[i], dtype == HVD_FLOAT16 ? static_cast<const void*>(&h) : &top, 2);
    }
  }
}

double reduce_gbps(int32_t dtype, int32_t op, const Options& o) {
  const size_t bytes = o.mib << 20;
  const size_t n = bytes / hvdc::common::dtype_size(dtype);
  std::vector<char> a(bytes), b(bytes), out(bytes);
  fill(a, dtype, 41);
  fill(b, dtype, 42);
  hvdc::ops::cpu::reduce(out.data(), a.data(), b.data(), n, dtype, op);  // fault the pages in
  const auto start = std::chrono::steady_clock::now();
  int iters = 0;
  double secs = 0;
  do {
    hvdc::ops::cpu::reduce(out.data(), a.data(), b.data(), n, dtype, op);
    ++iters;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (secs < o.seconds);
  return 3.0 * static_cast<double>(bytes) * iters / secs / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr, "usage: %s [--mib N (buffer size, default 8)] [--seconds S (per row)]\n",
                 argv[0]);
    return 2;
  }
  std::printf("# reduce kernel, sum, %zu MiB buffers, GB/s = (2 reads + 1 write) / s\n", o.mib);
  for (int32_t dtype : {HVD_FLOAT32, HVD_BFLOAT16, HVD_FLOAT16}) {
    std::printf("%-10s %8.1f\n", hvdc::common::dtype_name(dtype),
                reduce_gbps(dtype, HVD_OP_SUM, o));
  }
  return 0;
}
