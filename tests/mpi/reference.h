// Deterministic per-rank test data and a plain sequential reference for allreduce results,
// written independently of the library's kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hvdc_test {

size_t dtype_bytes(int32_t dtype);
const char* dtype_label(int32_t dtype);
const char* op_label(int32_t op);
bool is_float(int32_t dtype);

struct Case {
  int32_t dtype;
  int32_t op;
  double prescale = 1.0;
  double postscale = 1.0;
};

// Rank `rank`'s input for a case, count elements.
void fill_input(void* buf, size_t count, const Case& c, int rank);
// Compares an allreduce result over `size` ranks with the reference; explains the first miss.
// Integer SUM and PRODUCT wrap; integer AVERAGE is exact (the sum never wraps), truncated.
bool check_allreduce(const void* got, size_t count, const Case& c, int size, std::string* detail);

// Element i of a float tensor as double (fp16/bf16 decoded by the test's own code).
double load_float(const void* buf, size_t i, int32_t dtype);
void store_float(void* buf, size_t i, int32_t dtype, double value);  // exact values only

}  // namespace hvdc_test
