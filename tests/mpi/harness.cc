#include "harness.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hvdc_test {

namespace {

int64_t all_reduce_i64(int64_t value, int32_t op, const std::string& name) {
  int64_t shape[1] = {1};
  hvd_tensor_t t = {&value, HVD_INT64, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allreduce_async(&t, &value, op, name.c_str(), nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h != 0) hvd_handle_free(h);
  if (s != HVD_SUCCESS) {
    std::fprintf(stderr, "rank %d: agreement allreduce '%s' failed: %s\n", hvd_rank(), name.c_str(),
                 status_text(s).c_str());
    return INT64_MIN;
  }
  return value;
}

}  // namespace

hvd_status_t allreduce_constant(const std::string& name, int32_t op, size_t count, float value,
                                std::vector<float>* out) {
  out->assign(count, value);
  int64_t shape[1] = {static_cast<int64_t>(count)};
  hvd_tensor_t t = {out->data(), HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allreduce_async(&t, out->data(), op, name.c_str(), nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h != 0) hvd_handle_free(h);
  return s;
}

int64_t all_min(int64_t value, const std::string& name) {
  return all_reduce_i64(value, HVD_OP_MIN, name);
}

int64_t all_max(int64_t value, const std::string& name) {
  return all_reduce_i64(value, HVD_OP_MAX, name);
}

void record(Results& results, const std::string& name, bool ok, const std::string& detail) {
  if (!ok) std::fprintf(stderr, "rank %d: %s: %s\n", hvd_rank(), name.c_str(), detail.c_str());
  const bool everywhere = all_min(ok ? 1 : 0, "verdict." + name) == 1;
  if (everywhere) {
    ++results.passed;
  } else {
    ++results.failed;
  }
  if (hvd_rank() == 0) {
    std::printf("[%s] %s (np %d)\n", everywhere ? "PASS" : "FAIL", name.c_str(), hvd_size());
    std::fflush(stdout);
  }
}

int finish(const Results& results, const char* suite) {
  // Verdicts are agreed by every rank, so every rank sees the same counts. A suite in which no
  // case ran (a filter or an early return that skipped them all) proves nothing: it fails.
  const bool none_ran = results.passed + results.failed == 0;
  if (hvd_rank() <= 0) {
    std::printf("%s: %d passed, %d failed\n", suite, results.passed, results.failed);
    if (none_ran) std::printf("%s: FAIL: no case ran\n", suite);
    std::fflush(stdout);
  }
  return results.failed == 0 && !none_ran ? 0 : 1;
}

hvd_tensor_t make_tensor(void* data, int32_t dtype, const std::vector<int64_t>& shape) {
  hvd_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(shape.size());
  t.shape = shape.data();
  t.device.type = HVD_DEVICE_CPU;
  t.device.id = 0;
  return t;
}

std::string status_text(hvd_status_t status) {
  return std::string(hvd_status_string(status)) + ": " + hvd_last_error_message();
}

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void pretend_hosts() {
  const char* hosts = std::getenv("HVDC_TEST_HOSTS");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (rank == nullptr || size == nullptr) {
    rank = std::getenv("HVDC_RANK");
    size = std::getenv("HVDC_SIZE");
  }
  if (hosts == nullptr || rank == nullptr || size == nullptr) return;
  const int h = std::atoi(hosts), r = std::atoi(rank), n = std::atoi(size);
  if (h < 1 || n < 1) return;
  const char* layout = std::getenv("HVDC_TEST_HOST_LAYOUT");
  const bool interleaved = layout != nullptr && std::strcmp(layout, "interleaved") == 0;
  const int host = interleaved ? r % h : r * h / n;
  setenv("HVDC_HOSTNAME", ("test-host-" + std::to_string(host)).c_str(), 1);
}

}  // namespace hvdc_test
