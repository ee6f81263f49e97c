// Integer HVD_OP_AVERAGE is exact: the sum over ranks never wraps, so int8 100 on every rank
// averages to 100 at any np. Edge values (limits, mixed signs) through the direct algorithm
// (small tensors), the ring (large ones), a fused group, and reducescatter, each against a sum
// in 128 bits truncated toward zero.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// Values every rank picks from: the dtype's limits, its neighbours, mixed signs.
std::vector<int64_t> edge_values(int32_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
      return {255, 254, 0, 255, 1, 128};
    case HVD_INT8:
      return {100, 127, -128, -1, 100, 0, -127};
    case HVD_UINT16:
      return {65535, 65534, 0, 32768};
    case HVD_INT16:
      return {32767, -32768, -32767, 100, -1};
    case HVD_INT32:
      return {INT32_MAX, INT32_MIN, INT32_MAX - 1, -7, 0};
    default:
      return {INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, -1, 1};
  }
}

// Element i on `rank`: uniform gives every rank the same value (the average is the value
// itself), mixed gives each rank a different one.
int64_t value_at(int32_t dtype, bool uniform, int rank, size_t i) {
  const std::vector<int64_t> v = edge_values(dtype);
  return v[(uniform ? i : i + static_cast<size_t>(rank) * 3) % v.size()];
}

std::vector<char> fill(int32_t dtype, bool uniform, size_t first, size_t count) {
  const size_t esize = dtype_bytes(dtype);
  std::vector<char> buf(count * esize + 1);
  for (size_t i = 0; i < count; ++i) {
    const int64_t v = value_at(dtype, uniform, hvd_rank(), first + i);
    std::memcpy(buf.data() + i * esize, &v, esize);  // little endian: the low bytes
  }
  return buf;
}

// Compares count elements of got (global elements first..first+count) with the exact average.
bool check(int32_t dtype, bool uniform, const char* got, size_t first, size_t count,
           std::string* why) {
  const size_t esize = dtype_bytes(dtype);
  const bool is_signed =
      dtype == HVD_INT8 || dtype == HVD_INT16 || dtype == HVD_INT32 || dtype == HVD_INT64;
  for (size_t i = 0; i < count; ++i) {
    __int128 sum = 0;
    for (int r = 0; r < hvd_size(); ++r) sum += value_at(dtype, uniform, r, first + i);
    const int64_t want = static_cast<int64_t>(sum / hvd_size());
    uint64_t bits = 0;
    std::memcpy(&bits, got + i * esize, esize);
    int64_t have = static_cast<int64_t>(bits);
    if (is_signed && esize < 8 && (bits >> (esize * 8 - 1)) != 0) {
      have = static_cast<int64_t>(bits | (~uint64_t{0} << (esize * 8)));
    }
    if (have != want) {
      *why = "element " + std::to_string(first + i) + ": got " + std::to_string(have) + ", want " +
             std::to_string(want);
      return false;
    }
  }
  return true;
}

// Takes the handle by address: it is read after the submission (an argument) has set it.
hvd_status_t wait_and_free(hvd_status_t s, const hvd_handle_t* h) {
  if (s == HVD_SUCCESS) s = hvd_wait(*h);
  if (*h != 0) hvd_handle_free(*h);
  return s;
}

// One allreduce of count elements, or (group > 1) a grouped allreduce of `group` tensors.
bool run_allreduce(int32_t dtype, bool uniform, size_t count, size_t group, std::string* why) {
  std::vector<std::vector<char>> bufs;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<hvd_tensor_t> tensors;
  std::vector<void*> outs;
  for (size_t g = 0; g < group; ++g) {
    bufs.push_back(fill(dtype, uniform, g * count, count));
    shapes.push_back({static_cast<int64_t>(count)});
  }
  for (size_t g = 0; g < group; ++g) {
    tensors.push_back(make_tensor(bufs[g].data(), dtype, shapes[g]));
    outs.push_back(bufs[g].data());  // in place
  }
  hvd_handle_t h = 0;
  const hvd_status_t s = wait_and_free(
      group == 1 ? hvd_allreduce_async(&tensors[0], outs[0], HVD_OP_AVERAGE, nullptr, nullptr, &h)
                 : hvd_grouped_allreduce_async(tensors.data(), outs.data(), group, HVD_OP_AVERAGE,
                                               nullptr, nullptr, &h),
      &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  for (size_t g = 0; g < group; ++g) {
    if (!check(dtype, uniform, bufs[g].data(), g * count, count, why)) return false;
  }
  return true;
}

// Rows 2n+1 of 5 elements: the first rank gets 3 rows, the others 2.
bool run_reducescatter(int32_t dtype, bool uniform, std::string* why) {
  const int n = hvd_size(), me = hvd_rank();
  const int64_t rows = 2 * n + 1, cols = 5;
  std::vector<char> in = fill(dtype, uniform, 0, static_cast<size_t>(rows * cols));
  int64_t first = 0;
  for (int r = 0; r < me; ++r) first += rows / n + (r < rows % n ? 1 : 0);
  const int64_t mine = rows / n + (me < rows % n ? 1 : 0);
  std::vector<char> out(static_cast<size_t>(mine * cols) * dtype_bytes(dtype));
  std::vector<int64_t> shape = {rows, cols};
  hvd_tensor_t t = make_tensor(in.data(), dtype, shape);
  hvd_handle_t h = 0;
  const hvd_status_t s = wait_and_free(
      hvd_reducescatter_async(&t, out.data(), HVD_OP_AVERAGE, nullptr, nullptr, &h), &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  return check(dtype, uniform, out.data(), static_cast<size_t>(first * cols),
               static_cast<size_t>(mine * cols), why);
}

}  // namespace

void test_integer_average_edges(Results& results) {
  for (int32_t dtype = HVD_UINT8; dtype <= HVD_INT64; ++dtype) {
    for (bool uniform : {true, false}) {
      const std::string name = std::string("allreduce.exact_average.") + dtype_label(dtype) +
                               (uniform ? ".uniform" : ".mixed");
      std::string why;
      // 17 elements: the direct algorithm; 100003: the ring (64-bit lanes beyond 64 KiB).
      bool ok = run_allreduce(dtype, uniform, 17, 1, &why) &&
                run_allreduce(dtype, uniform, 100003, 1, &why);
      record(results, name, ok, why);
      why.clear();
      record(results, name + ".grouped", run_allreduce(dtype, uniform, 333, 4, &why), why);
      why.clear();
      record(results,
             "reducescatter.exact_average." + std::string(dtype_label(dtype)) +
                 (uniform ? ".uniform" : ".mixed"),
             run_reducescatter(dtype, uniform, &why), why);
    }
  }
}

}  // namespace hvdc_test
