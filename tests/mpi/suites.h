#pragma once

#include "harness.h"

namespace hvdc_test {

void test_allreduce_matrix(Results& results);
void test_allreduce_scaling(Results& results);
void test_bit_identical(Results& results);
// Integer averages of edge values (limits, mixed signs): direct, ring, grouped, reducescatter.
void test_integer_average_edges(Results& results);
void test_allgather(Results& results);
void test_broadcast(Results& results);
void test_barrier(Results& results);
// The reduced matrix (mode "reduced", run by scripts/sanitizers.sh): reduced_dtypes() x every op
// (allreduce) x reduced_sizes(np); allgather and broadcast over the same dtypes and sizes.
void test_allreduce_reduced(Results& results);
void test_allgather_reduced(Results& results);
void test_broadcast_reduced(Results& results);
inline std::vector<int32_t> reduced_dtypes() {
  return {HVD_FLOAT32, HVD_BFLOAT16, HVD_INT32, HVD_UINT8};
}
inline std::vector<int64_t> reduced_sizes(int np) {
  return {0, 1, np + 1, (64 << 10) + 1};
}
// Part of mode "lane": ops that a driving caller leaves to the engine thread (test_hand_over.cc).
void test_hand_over(Results& results);
void test_submission_orders(Results& results);
void test_many_in_flight(Results& results);
void test_threads(Results& results);
void test_callbacks_and_auto_names(Results& results);
void test_error_matrix(Results& results);
// Mode "bad-input": bad arguments on some ranks while the others pass good ones.
void test_bad_input(Results& results);
void test_fork(Results& results);
void test_random_named_tensors(Results& results);
void test_fusion_stats(Results& results);
void test_cache_warm_steps(Results& results);
void test_cache_invalidation(Results& results);
void test_split_ops(Results& results);
void test_join(Results& results);
void test_process_sets(Results& results);
void test_set_use_at_creation(Results& results);
// Separate processes: each ends the engine's work.
int run_abort_suite();
int run_reinit_suite();
int run_stall_suite();
int run_timeline_suite();  // run by check_timeline.py  // needs HVDC_STALL_CHECK_TIME=1
                           // HVDC_STALL_SHUTDOWN_TIME=3
// Needs HVDC_PROCESS_SETS (or HVDC_TEST_SETS_CONFIG: the config key instead).
int run_static_sets_suite();
int run_local_reads_suite();
int run_hierarchical_suite();
int run_lane_suite();

}  // namespace hvdc_test
