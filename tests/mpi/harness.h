// A small harness for multi-rank tests written against the public C API: each case computes a
// local verdict, the ranks agree on it (a case passes only if it passed everywhere), and rank 0
// prints one line per case and the closing "N passed, M failed".
#pragma once

#include <hvdc.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hvdc_test {

struct Results {
  int passed = 0;
  int failed = 0;
};

// Records one case: `ok` is this rank's verdict, `detail` is printed by a failing rank.
void record(Results& results, const std::string& name, bool ok, const std::string& detail = "");
// MIN over ranks of an int64 (through hvdc itself); used for verdicts and result hashes.
int64_t all_min(int64_t value, const std::string& name);
int64_t all_max(int64_t value, const std::string& name);
// Prints the closing line on rank 0; returns the process exit code: 1 when a case failed or when
// no case ran at all.
int finish(const Results& results, const char* suite);

// Reduces `count` float32 elements of `value` under `name` with `op`; *out holds the result.
hvd_status_t allreduce_constant(const std::string& name, int32_t op, size_t count, float value,
                                std::vector<float>* out);

// HVDC_TEST_HOSTS=H: this rank names itself one of H hosts (HVDC_HOSTNAME) before hvd_init, in
// blocks of consecutive ranks, or dealt round-robin with HVDC_TEST_HOST_LAYOUT=interleaved, so
// that one machine runs the algorithms across hosts (the transport still uses shared memory).
// The rank comes from mpirun's or hvdcrun's environment.
void pretend_hosts();

hvd_tensor_t make_tensor(void* data, int32_t dtype, const std::vector<int64_t>& shape);
std::string status_text(hvd_status_t status);  // "HVD_ERR_...: message"
uint64_t fnv1a(const void* data, size_t bytes);

}  // namespace hvdc_test
