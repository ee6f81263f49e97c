// The C++ binding's test program: runs every case on every rank under one hvdc::Session and
// exits non-zero if any expectation failed on this rank. Usage: hvdc_cxx_test TIMELINE_PATH
// (launched by mpirun or hvdcrun; meson suite `cxx`).
#include <cstdio>
#include <string>

#include "cases.h"
#include "check.h"

namespace {

template <class Fn>
void run_case(const char* name, Fn fn) {
  try {
    fn();
  } catch (const hvdc::Error& e) {
    cxx_test::fail(__FILE__, __LINE__, std::string(name) + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TIMELINE_PATH\n", argv[0]);
    return 2;
  }
  const std::string timeline_path = argv[1];
  try {
    hvdc::SharedBuffer<int32_t> survivor(16);  // shared memory needs no engine
    hvdc::Config config;
    config.set(hvdc::ConfigKey::CacheCapacity, 64).set(hvdc::ConfigKey::LogLevel, 3);
    hvdc::Session session(config);
    run_case("topology", cxx_test::test_topology);
    run_case("allreduce", cxx_test::test_allreduce);
    run_case("allreduce_async", cxx_test::test_allreduce_async);
    run_case("grouped_allreduce", cxx_test::test_grouped_allreduce);
    run_case("allgather", cxx_test::test_allgather);
    run_case("broadcast", cxx_test::test_broadcast);
    run_case("alltoall", cxx_test::test_alltoall);
    run_case("reducescatter", cxx_test::test_reducescatter);
    run_case("process_sets", cxx_test::test_process_sets);
    run_case("errors", cxx_test::test_errors);
    run_case("dlpack", cxx_test::test_dlpack);
    run_case("shared_memory", [&] { cxx_test::test_shared_memory(survivor); });
    run_case("diagnostics", [&] { cxx_test::test_diagnostics(timeline_path); });
    run_case("barrier_and_join", cxx_test::test_barrier_and_join);
    run_case("abort", cxx_test::test_abort);
    const int rank = hvdc::rank(), size = hvdc::size();
    // Shutdown succeeds after an abort; the Session's own shutdown then finds no engine.
    run_case("shutdown", [] {
      hvdc::shutdown();
      EXPECT(!hvdc::is_initialized());
      EXPECT_EQ(hvdc::rank(), -1);
    });
    run_case("shared_after_shutdown",
             [&] { cxx_test::test_shared_after_shutdown(survivor, size); });
    std::printf("cxx: rank %d of %d: %d failures\n", rank, size, cxx_test::failures());
  } catch (const hvdc::Error& e) {
    std::fprintf(stderr, "cxx: %s\n", e.what());
    return 1;
  }
  return cxx_test::failures() == 0 ? 0 : 1;
}
