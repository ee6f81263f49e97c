// shm_limit: the physical limits an np-2 allreduce on one host is measured against, on this
// machine and in the same run, without MPI or hvdc. Two processes (this one and a fork) map one
// shared segment holding both ranks' buffers A and B.
//   reduce     the zero-copy limit: rank r reduces half r of the buffers in place, reading A and
//              B and writing the sum to both (every rank ends with the full result, as after an
//              allreduce), then both meet at a barrier. busbw = bytes / time, the figure an
//              allreduce's busbw (algbw * 2(n-1)/n, n = 2) is compared with.
//   reduce-nt  the same with non-temporal stores (x86 with AVX2 only).
//   blocked    the same a 16 KiB block at a time: the sum into A, then the block copied to B
//              while it is in the first-level cache (two short passes, where reduce makes one
//              pass storing to two streams). The limit is the best of the three.
//   cma        the limit for buffers the peers cannot map (a framework's heap): each rank has a
//              private buffer and, per 256 KiB segment of its half, reads the peer's segment
//              through the kernel (process_vm_readv), adds it into its own and writes the sum
//              into the peer's (process_vm_writev), as hvdc's in-place path does on heap buffers.
//   sync       one meeting at the barrier with no work: what one more synchronization of the
//              two processes costs. The limit's loop meets once per op; an allreduce called
//              through an API must meet twice (every input ready before anyone reads it, every
//              result written before anyone returns), so the figure it can reach at best is
//              bytes / (limit's time per op + one sync): "synced" below.
//   stream     memory bandwidth: each process streams over its own buffer in place (a[i] += 1,
//              one read and one write), both at once; GB/s counts bytes read plus written. The
//              in-place allreduce moves 4 bytes per byte of busbw, so it bounds busbw by GB/s / 4.
// usage: shm_limit [-b MIN] [-e MAX] [-f FACTOR] [--json FILE]   (sizes are bytes per rank)
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "bench_options.h"
#include "spin_barrier.h"
#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_NT_KERNEL 1
#endif

namespace {

constexpr int kRanks = 2;
constexpr size_t kAlign = 4096;

// The control block at the segment's start: a two-party sense-reversing barrier and the child's
// verdict on its first result.
struct Control {
  hvdc_bench::SpinBarrier meet;
  alignas(64) std::atomic<int> child_wrong;
  alignas(64) std::atomic<pid_t> pid[2];     // each rank's process and private buffer,
  std::atomic<uintptr_t> private_buffer[2];  // for the cma kernel
  std::atomic<int> cma_refused;              // a kernel copy failed (ptrace policy)
};

struct Segment {
  Control* control;
  float* a;  // rank 0's buffer
  float* b;  // rank 1's buffer
  size_t count;
  float* own = nullptr;  // this rank's private buffer (cma)
};

enum Kernel { kReduce, kReduceNt, kReduceBlocked, kStream, kCma, kSync, kKernels };
constexpr size_t kCmaSegment = 256 << 10;  // HVDC_SEGMENT_BYTES' default

double now_s() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target_clones("avx2", "default"))) void reduce_half(float* __restrict a,
                                                                   float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float s = a[i] + b[i];
    a[i] = s;
    b[i] = s;
  }
}

#ifdef HAVE_NT_KERNEL
// n is a multiple of 8 and both pointers 32-byte aligned (the halves are cache-line multiples).
__attribute__((target("avx2"))) void reduce_half_nt(float* a, float* b, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    const __m256 s = _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i));
    _mm256_stream_ps(a + i, s);
    _mm256_stream_ps(b + i, s);
  }
  _mm_sfence();
}
#endif

__attribute__((target_clones("avx2", "default"))) void stream_own(float* a, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += 1.0f;
}

__attribute__((target_clones("avx2", "default"))) void add_into(float* __restrict a,
                                                                const float* __restrict b,
                                                                size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

// hvdc's loop on mapped outputs (LocalAccess::block_bytes): each block reduced, then copied.
void reduce_half_blocked(float* a, float* b, size_t n) {
  constexpr size_t kBlock = (16 << 10) / sizeof(float);
  for (size_t at = 0; at < n; at += kBlock) {
    const size_t len = std::min(kBlock, n - at);
    add_into(a + at, b + at, len);
    std::memcpy(b + at, a + at, len * sizeof(float));
  }
}

// The peer's half r through the kernel: read a segment, add it into this rank's buffer, write
// the sum back. Returns false if the kernel refused a copy.
bool cma_reduce_half(const Segment* s, int rank) {
  // Page-aligned, as the remote buffer is: the kernel's copy into a destination 1-63 bytes past
  // its source modulo 4 KiB runs several times slower on some CPUs (src/common/copy_bytes.h),
  // and hvdc places its reads at the source's page offset.
  static thread_local std::vector<char> bounce_area(kCmaSegment + 4096);
  float* bounce_at = reinterpret_cast<float*>(
      bounce_area.data() + (4096 - reinterpret_cast<uintptr_t>(bounce_area.data()) % 4096));
  const int peer = 1 - rank;
  const pid_t pid = s->control->pid[peer].load();
  char* remote = reinterpret_cast<char*>(s->control->private_buffer[peer].load());
  const size_t half = s->count / 2 * sizeof(float), lo = rank * half;
  char* own = reinterpret_cast<char*>(s->own);
  for (size_t off = lo; off < lo + half; off += kCmaSegment) {
    const size_t n = std::min(kCmaSegment, lo + half - off);
    iovec local_in = {bounce_at, n}, remote_io = {remote + off, n};
    if (process_vm_readv(pid, &local_in, 1, &remote_io, 1, 0) != static_cast<ssize_t>(n)) {
      return false;
    }
    add_into(reinterpret_cast<float*>(own + off), bounce_at, n / sizeof(float));
    iovec local_out = {own + off, n};
    if (process_vm_writev(pid, &local_out, 1, &remote_io, 1, 0) != static_cast<ssize_t>(n)) {
      return false;
    }
  }
  return true;
}

void run_kernel(Kernel k, const Segment* s, int rank) {
  const size_t half = s->count / 2, lo = rank * half;
  if (k == kReduce) reduce_half(s->a + lo, s->b + lo, half);
  if (k == kReduceBlocked) reduce_half_blocked(s->a + lo, s->b + lo, half);
#ifdef HAVE_NT_KERNEL
  if (k == kReduceNt) reduce_half_nt(s->a + lo, s->b + lo, half);
#endif
  if (k == kStream) stream_own(rank == 0 ? s->a : s->b, s->count);
  if (k == kCma && !cma_reduce_half(s, rank)) s->control->cma_refused.store(1);
}

long count_not(const float* v, size_t n, float want) {
  long wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += v[i] != want;
  return wrong;
}

// One op on 1s and 2s must leave 3s in both buffers: a limit measured on a kernel that does not
// reduce would be no limit. Each rank first-touches its own buffer.
long check_first_op(Kernel k, Segment* s, int rank, int* sense) {
  if (k == kSync) return 0;  // no data
  float* mine = k == kCma ? s->own : rank == 0 ? s->a : s->b;
  for (size_t i = 0; i < s->count; ++i) mine[i] = static_cast<float>(rank + 1);
  s->control->meet.wait(sense);
  run_kernel(k, s, rank);
  s->control->meet.wait(sense);
  const size_t half = s->count / 2, lo = rank * half;
  if (k == kStream) return count_not(mine, s->count, rank + 2.0f);
  if (k == kCma) {
    // The peer writes half of this buffer: it must not start its next op until this is counted.
    const long wrong = s->control->cma_refused.load() ? 0 : count_not(mine, s->count, 3.0f);
    s->control->meet.wait(sense);
    return wrong;
  }
  return count_not(s->a + lo, half, 3.0f) + count_not(s->b + lo, half, 3.0f);
}

// Seconds per op, as rank 0 sees it (the barrier keeps both ranks in step).
double time_kernel(Kernel k, Segment* s, int rank, int iters, int* sense) {
  for (int i = 0; i < 2; ++i) {
    run_kernel(k, s, rank);
    s->control->meet.wait(sense);
  }
  const double start = now_s();
  for (int i = 0; i < iters; ++i) {
    run_kernel(k, s, rank);
    s->control->meet.wait(sense);
  }
  return (now_s() - start) / iters;
}

// About 2 GiB of traffic per measurement, at least 5 ops, at most 20000; the sync, which moves
// no data, 20000 meetings at every size.
int iterations_for(Kernel k, size_t bytes) {
  if (k == kSync) return 20000;
  const size_t want = (size_t{2} << 30) / bytes;
  return want < 5 ? 5 : want > 20000 ? 20000 : static_cast<int>(want);
}

struct Options {
  size_t min_bytes = 0, max_bytes = 0, factor = 0;
  std::string json;
};

bool parse(int argc, char** argv, Options* o) {
  o->min_bytes = 64 << 10;
  o->max_bytes = 256 << 20;
  o->factor = 4;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = v != nullptr;
    if (ok && a == "-b") {
      ok = hvdc_bench::parse_size(v, &o->min_bytes);
    } else if (ok && a == "-e") {
      ok = hvdc_bench::parse_size(v, &o->max_bytes);
    } else if (ok && a == "-f") {
      ok = hvdc_bench::parse_size(v, &o->factor) && o->factor >= 2;
    } else if (ok && a == "--json") {
      o->json = v;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "shm_limit: bad argument %s %s\n"
                   "usage: shm_limit [-b MIN] [-e MAX] [-f FACTOR>=2] [--json FILE]\n"
                   "sizes are bytes per rank, with K, M, G suffixes (powers of 1024)\n",
                   a.c_str(), v ? v : "");
      return false;
    }
  }
  return true;
}

struct Row {
  size_t bytes = 0;
  double seconds[kKernels] = {};  // 0 where the kernel is not built for this machine
  long wrong = 0;
};

bool kernel_available(Kernel k) {
#ifdef HAVE_NT_KERNEL
  if (k == kReduceNt) return __builtin_cpu_supports("avx2");
#else
  if (k == kReduceNt) return false;
#endif
  return true;
}

// Both ranks run every kernel in the same order; rank 0 keeps the times.
void measure_size(Segment* s, int rank, Row* row, int* sense) {
  for (int k = 0; k < kKernels; ++k) {
    const Kernel kernel = static_cast<Kernel>(k);
    if (!kernel_available(kernel)) continue;
    row->wrong += check_first_op(kernel, s, rank, sense);
    row->seconds[k] = time_kernel(kernel, s, rank, iterations_for(kernel, row->bytes), sense);
  }
  if (s->control->cma_refused.load()) row->seconds[kCma] = 0;  // not measured: shown as 0
}

// Maps the segment, forks rank 1, measures, and fills rank 0's row (rank 1 exits here).
bool run_size(Row* row) {
  const size_t buffer = (row->bytes + kAlign - 1) / kAlign * kAlign;
  const size_t total = kAlign + 2 * buffer;
  void* mapped = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::fprintf(stderr, "shm_limit: mmap of %zu bytes failed: %s\n", total, std::strerror(errno));
    return false;
  }
  char* base = static_cast<char*>(mapped);
  Control* control = new (base) Control();  // zeroed atomics, placed in the shared page
  Segment s = {control, reinterpret_cast<float*>(base + kAlign),
               reinterpret_cast<float*>(base + kAlign + buffer), row->bytes / sizeof(float)};
  // The cma kernel's buffers are private to each process, as a framework's heap is: mapped
  // before the fork, each process's first touch gives it pages of its own.
  void* own = mmap(nullptr, buffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (own == MAP_FAILED) {
    std::fprintf(stderr, "shm_limit: mmap of %zu private bytes failed: %s\n", buffer,
                 std::strerror(errno));
    return false;
  }
  s.own = static_cast<float*>(own);
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "shm_limit: fork failed: %s\n", std::strerror(errno));
    return false;
  }
  const int rank = child == 0 ? 1 : 0;
  control->pid[rank].store(getpid());
  control->private_buffer[rank].store(reinterpret_cast<uintptr_t>(own));
  int sense = 0;
  control->meet.wait(&sense);  // both published before either reads the other's
  measure_size(&s, rank, row, &sense);
  munmap(own, buffer);
  if (child == 0) {
    control->child_wrong.store(row->wrong > 0 ? 1 : 0);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  row->wrong += control->child_wrong.load();
  munmap(base, total);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

double gbps(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0;
}

// What a row reports, in GB/s.
struct Figures {
  double reduce, reduce_nt, reduce_blocked, limit;  // busbw
  double stream;                                    // bytes read + written by both ranks
  double cma;                                       // busbw through kernel copies (0: refused)
  double sync_us;                                   // one more meeting of the two processes
  double synced;  // busbw of the limit's op with that meeting added
};

Figures figures(const Row& r) {
  Figures f;
  f.reduce = gbps(r.bytes, r.seconds[kReduce]);
  f.reduce_nt = gbps(r.bytes, r.seconds[kReduceNt]);
  f.reduce_blocked = gbps(r.bytes, r.seconds[kReduceBlocked]);
  f.limit = std::max({f.reduce, f.reduce_nt, f.reduce_blocked});
  f.stream = gbps(2.0 * kRanks * r.bytes, r.seconds[kStream]);
  f.cma = gbps(r.bytes, r.seconds[kCma]);
  f.sync_us = r.seconds[kSync] * 1e6;
  f.synced = f.limit > 0 ? gbps(r.bytes, r.bytes / (f.limit * 1e9) + r.seconds[kSync]) : 0;
  return f;
}

void write_json(const Options& o, const std::vector<Row>& rows) {
  FILE* out = std::fopen(o.json.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "shm_limit: cannot write %s: %s\n", o.json.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(out, "{\"tool\": \"shm_limit\", \"ranks\": %d, \"rows\": [", kRanks);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Figures f = figures(rows[i]);
    std::fprintf(out,
                 "%s\n  {\"bytes\": %zu, \"reduce_busbw\": %.4f, \"reduce_nt_busbw\": %.4f, "
                 "\"reduce_blocked_busbw\": %.4f, \"limit_busbw\": %.4f, \"stream_gbps\": %.4f, "
                 "\"stream_busbw_bound\": %.4f, \"cma_busbw\": %.4f, \"sync_us\": %.4f, "
                 "\"synced_busbw\": %.4f, \"wrong\": %ld}",
                 i ? "," : "", rows[i].bytes, f.reduce, f.reduce_nt, f.reduce_blocked, f.limit,
                 f.stream, f.stream / 4, f.cma, f.sync_us, f.synced, rows[i].wrong);
  }
  std::fprintf(out, "\n]}\n");
  std::fclose(out);
}

void report(const Options& o, const std::vector<Row>& rows) {
  std::printf("# shm_limit: 2 processes, one shared segment, float32 sum in place (busbw GB/s)\n");
  std::printf("%12s %10s %10s %10s %10s %12s %12s %10s %8s %10s %7s\n", "size(B)", "reduce",
              "reduce_nt", "blocked", "limit", "stream_GB/s", "stream/4", "cma", "sync_us",
              "synced", "#wrong");
  for (const Row& r : rows) {
    const Figures f = figures(r);
    std::printf("%12zu %10.2f %10.2f %10.2f %10.2f %12.2f %12.2f %10.2f %8.3f %10.2f %7ld\n",
                r.bytes, f.reduce, f.reduce_nt, f.reduce_blocked, f.limit, f.stream, f.stream / 4,
                f.cma, f.sync_us, f.synced, r.wrong);
  }
  if (!o.json.empty()) write_json(o, rows);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  std::vector<Row> rows;
  long wrong = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    Row row;
    // Whole cache lines per half, so the halves never share a line and the AVX2 kernel's
    // aligned accesses hold.
    row.bytes = (bytes + 127) / 128 * 128;
    if (!run_size(&row)) return 1;
    wrong += row.wrong;
    rows.push_back(row);
  }
  report(o, rows);
  if (wrong != 0) std::fprintf(stderr, "shm_limit: FAILED: %ld wrong elements\n", wrong);
  return wrong == 0 ? 0 : 1;
}
