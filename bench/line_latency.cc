// The round trip of one cache line between two processes on two CPUs: one writes a counter,
// the other answers on a second line, many times over. Every meeting of two ranks in shared
// memory (a board, a barrier, a flag) costs at least one such round trip, and on a VM it is not
// a constant: the host moves the virtual CPUs, and the same two CPUs measured 39, 90 and 500 ns
// within an hour on one VM of this project's kind. compare.sh measures it before every step, so
// that a table says in which of these phases each figure was taken.
//
// usage: line_latency [-n ROUND_TRIPS] [--json FILE]
// The two processes are pinned to the first two CPUs this process may use; the best of three
// passes is reported (a pass that a preemption hit is slower, never faster).
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace {

struct Lines {
  alignas(64) std::atomic<uint64_t> ping{0};
  alignas(64) std::atomic<uint64_t> pong{0};
};

struct Options {
  uint64_t round_trips = 100000;
  std::string json;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "-n" && v != nullptr && std::strtoull(v, nullptr, 10) > 0) {
      o->round_trips = std::strtoull(v, nullptr, 10);
    } else if (a == "--json" && v != nullptr) {
      o->json = v;
    } else {
      std::fprintf(stderr,
                   "line_latency: bad argument %s\nusage: line_latency [-n ROUND_TRIPS] "
                   "[--json FILE]\n",
                   argv[i]);
      return false;
    }
    ++i;
  }
  return true;
}

// The first two CPUs of this process's affinity mask, or false if it has fewer.
bool two_cpus(int* first, int* second) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    *(found == 0 ? first : second) = cpu;
    ++found;
  }
  return found == 2;
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

// The answering side: each counter written to ping comes back on pong. Its own numbering
// continues across passes, as the asking side's does.
void answer(Lines* lines, uint64_t total) {
  for (uint64_t i = 1; i <= total; ++i) {
    while (lines->ping.load(std::memory_order_acquire) != i) {
    }
    lines->pong.store(i, std::memory_order_release);
  }
}

// One pass of the asking side: nanoseconds per round trip.
double ask(Lines* lines, uint64_t first, uint64_t count) {
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = first; i < first + count; ++i) {
    lines->ping.store(i, std::memory_order_release);
    while (lines->pong.load(std::memory_order_acquire) != i) {
    }
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / static_cast<double>(count);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  int cpu_a = -1, cpu_b = -1;
  if (!two_cpus(&cpu_a, &cpu_b)) {
    std::fprintf(stderr, "line_latency: fewer than two CPUs are usable here\n");
    return 77;
  }
  void* mem =
      mmap(nullptr, sizeof(Lines), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::fprintf(stderr, "line_latency: mmap: %s\n", std::strerror(errno));
    return 1;
  }
  auto* lines = new (mem) Lines;
  constexpr int kPasses = 3;
  const uint64_t warmup = std::max<uint64_t>(o.round_trips / 10, 1);
  const uint64_t total = warmup + kPasses * o.round_trips;
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "line_latency: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {  // answers unpinned if it must: the parent would otherwise wait for good
    if (!pin(cpu_b)) std::fprintf(stderr, "line_latency: cannot pin to CPU %d\n", cpu_b);
    answer(lines, total);
    _exit(0);
  }
  if (!pin(cpu_a)) std::fprintf(stderr, "line_latency: cannot pin to CPU %d\n", cpu_a);
  ask(lines, 1, warmup);
  double best = 0;
  for (int pass = 0; pass < kPasses; ++pass) {
    const double ns = ask(lines, 1 + warmup + pass * o.round_trips, o.round_trips);
    best = pass == 0 ? ns : std::min(best, ns);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("# line_latency: one cache line's round trip between CPUs %d and %d\n", cpu_a, cpu_b);
  std::printf("round_trip_ns %.1f\n", best);
  if (!o.json.empty()) {
    FILE* out = std::fopen(o.json.c_str(), "w");
    if (out == nullptr) {
      std::fprintf(stderr, "line_latency: cannot write %s: %s\n", o.json.c_str(),
                   std::strerror(errno));
      return 1;
    }
    std::fprintf(out, "{\"round_trip_ns\": %.1f, \"cpus\": [%d, %d], \"round_trips\": %llu}\n",
                 best, cpu_a, cpu_b, static_cast<unsigned long long>(o.round_trips));
    std::fclose(out);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
