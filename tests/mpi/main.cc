// The mpi suite's program. Modes: main (the collective matrix and error cases), engine (fusion,
// the response cache, many named tensors, process sets, and the error cases again), abort,
// reinit, stall, timeline, sets-static (the sets HVDC_PROCESS_SETS creates at init), reduced
// (a small matrix for the sanitizer builds: scripts/sanitizers.sh), bad-input (bad arguments on
// some ranks, good ones on the others), no-cases (runs no case: the harness must fail it), local
// (allreduces that read local peers' buffers in place, and their fallback: test_local_reads.cc),
// lane (allreduces agreed on the set's board without a round: test_lane.cc), hierarchical
// (allreduces across hosts: test_hierarchical.cc). With HVDC_TEST_HOSTS=H every mode runs as if
// the ranks were on H hosts.
#include <cstdio>
#include <cstring>

#include "harness.h"
#include "suites.h"

int main(int argc, char** argv) {
  using namespace hvdc_test;
  const char* mode = argc > 1 ? argv[1] : "main";
  pretend_hosts();
  if (std::strcmp(mode, "abort") == 0) return run_abort_suite();
  if (std::strcmp(mode, "reinit") == 0) return run_reinit_suite();
  if (std::strcmp(mode, "stall") == 0) return run_stall_suite();
  if (std::strcmp(mode, "timeline") == 0) return run_timeline_suite();
  if (std::strcmp(mode, "sets-static") == 0) return run_static_sets_suite();
  if (std::strcmp(mode, "local") == 0) return run_local_reads_suite();
  if (std::strcmp(mode, "lane") == 0) return run_lane_suite();
  if (std::strcmp(mode, "hierarchical") == 0) return run_hierarchical_suite();
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  Results results;
  if (std::strcmp(mode, "engine") == 0) {
    test_random_named_tensors(results);
    test_fusion_stats(results);
    test_cache_warm_steps(results);
    test_cache_invalidation(results);
    test_split_ops(results);
    test_join(results);
    test_submission_orders(results);
    test_allgather(results);
    test_error_matrix(results);
    test_process_sets(results);
    test_set_use_at_creation(results);
    const int rc = finish(results, "engine");
    return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
  }
  if (std::strcmp(mode, "no-cases") == 0) {
    const int rc = finish(results, "no-cases");
    return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
  }
  if (std::strcmp(mode, "bad-input") == 0) {
    test_bad_input(results);
    const int rc = finish(results, "bad-input");
    return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
  }
  if (std::strcmp(mode, "reduced") == 0) {
    test_allreduce_reduced(results);
    test_allgather_reduced(results);
    test_broadcast_reduced(results);
    test_barrier(results);
    test_threads(results);
    test_error_matrix(results);
    const int rc = finish(results, "reduced");
    return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
  }
  test_allreduce_matrix(results);
  test_allreduce_scaling(results);
  test_integer_average_edges(results);
  test_bit_identical(results);
  test_allgather(results);
  test_broadcast(results);
  test_barrier(results);
  test_submission_orders(results);
  test_many_in_flight(results);
  test_threads(results);
  test_callbacks_and_auto_names(results);
  test_error_matrix(results);
  test_fork(results);
  const int rc = finish(results, "mpi");
  if (hvd_shutdown() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_shutdown failed: %s\n", hvd_last_error_message());
    return 1;
  }
  return rc;
}
