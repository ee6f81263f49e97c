// The C++ binding's test cases; main.cc runs them in this order on every rank.
#ifndef HVDC_TESTS_CXX_CASES_H_
#define HVDC_TESTS_CXX_CASES_H_

#include <hvdc.hpp>

#include <cstdint>
#include <string>

namespace cxx_test {

void test_allreduce();
void test_allreduce_async();
void test_grouped_allreduce();
void test_allgather();
void test_broadcast();
void test_alltoall();
void test_reducescatter();
void test_barrier_and_join();
void test_topology();
void test_process_sets();
void test_errors();
void test_dlpack();
void test_diagnostics(const std::string& timeline_path);
void test_abort();
// survivor: a 16-element buffer made before init.
void test_shared_memory(hvdc::SharedBuffer<int32_t>& survivor);
void test_shared_after_shutdown(hvdc::SharedBuffer<int32_t>& survivor, int size);

}  // namespace cxx_test

#endif  // HVDC_TESTS_CXX_CASES_H_
