// Allreduce over every dtype x op x size, in place and out of place, with and without scale
// factors; results checked against the reference and compared bit for bit across ranks.
#include <cstring>
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

constexpr size_t kSegmentBytes = 256 << 10;  // HVDC_SEGMENT_BYTES default

std::vector<size_t> sizes_for(int32_t dtype, int np) {
  const size_t seg = kSegmentBytes / dtype_bytes(dtype);
  return {0,
          1,
          static_cast<size_t>(np > 1 ? np - 1 : 2),
          static_cast<size_t>(np + 1),
          seg - 1,
          seg + 1,
          999983,
          (16u << 20) / dtype_bytes(dtype)};
}

bool run_case(const Case& c, size_t count, bool in_place, std::string* detail) {
  const size_t bytes = count * dtype_bytes(c.dtype);
  std::vector<char> input(bytes + 1), output(bytes + 1);
  fill_input(input.data(), count, c, hvd_rank());
  void* out = in_place ? input.data() : output.data();
  std::vector<int64_t> shape = {static_cast<int64_t>(count)};
  hvd_tensor_t t = make_tensor(input.data(), c.dtype, shape);
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  args.prescale_factor = c.prescale;
  args.postscale_factor = c.postscale;
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allreduce_async(&t, out, c.op, nullptr, &args, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h != 0) hvd_handle_free(h);
  if (s != HVD_SUCCESS) {
    *detail = "allreduce failed: " + status_text(s);
    return false;
  }
  return check_allreduce(out, count, c, hvd_size(), detail);
}

// Every rank's result must hash the same.
bool same_everywhere(const void* data, size_t bytes, const std::string& name) {
  const int64_t h = static_cast<int64_t>(fnv1a(data, bytes) >> 1);
  return all_min(h, "hmin." + name) == all_max(h, "hmax." + name);
}

}  // namespace

void test_allreduce_matrix(Results& results) {
  static const int32_t kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX,
                                 HVD_OP_PRODUCT};
  int index = 0;
  for (int32_t dtype = HVD_UINT8; dtype <= HVD_BFLOAT16; ++dtype) {
    for (int32_t op : kOps) {
      if (dtype == HVD_BOOL && op == HVD_OP_AVERAGE) continue;  // rejected: see the error suite
      bool ok = true;
      std::string detail;
      for (size_t count : sizes_for(dtype, hvd_size())) {
        Case c{dtype, op};
        if (!run_case(c, count, (index++ % 2) == 0, &detail)) {
          ok = false;
          detail = "count " + std::to_string(count) + ": " + detail;
          break;
        }
      }
      record(results, std::string("allreduce.") + dtype_label(dtype) + "." + op_label(op), ok,
             detail);
    }
  }
}

void test_allreduce_reduced(Results& results) {
  static const int32_t kOps[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX,
                                 HVD_OP_PRODUCT};
  int index = 0;
  for (int32_t dtype : reduced_dtypes()) {
    for (int32_t op : kOps) {
      bool ok = true;
      std::string detail;
      for (int64_t count : reduced_sizes(hvd_size())) {
        if (!run_case(Case{dtype, op}, static_cast<size_t>(count), (index++ % 2) == 0, &detail)) {
          ok = false;
          detail = "count " + std::to_string(count) + ": " + detail;
          break;
        }
      }
      record(results, std::string("allreduce.") + dtype_label(dtype) + "." + op_label(op), ok,
             detail);
    }
  }
}

void test_allreduce_scaling(Results& results) {
  static const int32_t kDtypes[] = {HVD_INT32,   HVD_UINT8,   HVD_FLOAT32,
                                    HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16};
  for (int32_t dtype : kDtypes) {
    for (int32_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
      Case c{dtype, op, 3.0, 0.25};
      std::string detail;
      bool ok = run_case(c, 1000, false, &detail) && run_case(c, 300001, true, &detail);
      record(results, std::string("allreduce.scaled.") + dtype_label(dtype) + "." + op_label(op),
             ok, detail);
    }
  }
}

void test_bit_identical(Results& results) {
  // Random float32 data in a ring-sized buffer: summation order decides the low bits, so only
  // the algorithm's guarantee makes every rank's bits equal.
  const size_t count = 1 << 20;
  std::vector<float> data(count);
  uint64_t x = 0x1234567ull + static_cast<uint64_t>(hvd_rank()) * 7919;
  for (float& v : data) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5) * 1e3f;
  }
  bool ok = true;
  for (size_t n : {size_t{100}, size_t{40000}, count}) {
    std::vector<int64_t> shape = {static_cast<int64_t>(n)};
    hvd_tensor_t t = make_tensor(data.data(), HVD_FLOAT32, shape);
    std::vector<float> out(n);
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_allreduce_async(&t, out.data(), HVD_OP_AVERAGE, nullptr, nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    if (h) hvd_handle_free(h);
    // Collective on every rank, whatever the local outcome, so no rank waits alone.
    const bool same = same_everywhere(out.data(), n * sizeof(float), "bits." + std::to_string(n));
    ok = ok && s == HVD_SUCCESS && same;
  }
  record(results, "allreduce.bit_identical_across_ranks", ok);
}

}  // namespace hvdc_test
