#pragma once

#include "harness.h"

namespace hvdc_test {

void test_allreduce_matrix(Results& results);
void test_allreduce_scaling(Results& results);
void test_bit_identical(Results& results);
void test_allgather(Results& results);
void test_broadcast(Results& results);
void test_barrier(Results& results);
void test_submission_orders(Results& results);
void test_many_in_flight(Results& results);
void test_threads(Results& results);
void test_callbacks_and_auto_names(Results& results);
void test_error_matrix(Results& results);
void test_fork(Results& results);
void test_random_named_tensors(Results& results);
void test_fusion_stats(Results& results);
void test_cache_warm_steps(Results& results);
void test_cache_invalidation(Results& results);
void test_split_ops(Results& results);
void test_join(Results& results);
void test_process_sets(Results& results);
// Separate processes: each ends the engine's work.
int run_abort_suite();
int run_fault_stop_suite(const char* phase);  // "negotiation" or "transfer"; HVDC_TIMEOUT=2
int run_reinit_suite();
int run_stall_suite();
int run_timeline_suite();  // run by check_timeline.py  // needs HVDC_STALL_CHECK_TIME=1
                           // HVDC_STALL_SHUTDOWN_TIME=3
// Needs HVDC_PROCESS_SETS (or HVDC_TEST_SETS_CONFIG: the config key instead).
int run_static_sets_suite();

}  // namespace hvdc_test
