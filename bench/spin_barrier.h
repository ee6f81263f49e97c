// A sense-reversing barrier for two processes, placed in memory both map (the benchmarks'
// limits run without MPI or hvdc between their steps). Spins briefly, then yields: other jobs
// share these cores, and a spinner that never yields can hold the core its peer needs.
#pragma once

#include <sched.h>

#include <atomic>

namespace hvdc_bench {

struct SpinBarrier {
  alignas(64) std::atomic<int> arrived{0};
  alignas(64) std::atomic<int> phase{0};

  // *sense is the caller's own, starting at 0; every party calls this the same number of times.
  void wait(int* sense) {
    *sense = !*sense;
    if (arrived.fetch_add(1) == 1) {
      arrived.store(0);
      phase.store(*sense);
      return;
    }
    for (unsigned spins = 0; phase.load() != *sense; ++spins) {
      if (spins > 2000) sched_yield();
    }
  }
};

}  // namespace hvdc_bench
