// Allgather (first dimension different on every rank; library-owned and caller-allocated
// outputs), broadcast from every root, and barrier, over every dtype.
#include <cstring>
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// Rank r contributes rows(r) rows of `cols` elements; element (row, col) holds a value derived
// from (r, row, col) that is exact in every dtype. Base 0 keeps every rank empty; otherwise the
// odd ranks send one row less (and base 1 leaves them empty), so first dimensions differ.
int64_t rows_of(int rank, int64_t base) {
  return base == 0 ? 0 : base - rank % 2;
}

// The suite's sizes in elements: {0, 1, np-1, np+1, segment-1, segment+1, a prime near 10^6,
// 16 MiB} (segment = the ring's 256 KiB pieces).
std::vector<int64_t> suite_sizes(int32_t dtype) {
  const int64_t np = hvd_size(), seg = (256 << 10) / static_cast<int64_t>(dtype_bytes(dtype));
  return {0,
          1,
          np > 1 ? np - 1 : 2,
          np + 1,
          seg - 1,
          seg + 1,
          999983,
          (16 << 20) / static_cast<int64_t>(dtype_bytes(dtype))};
}

// Cell (row, col) of rank `rank` holds ((rank * 7 + row * 3 + col) mod 9) - 4, one of -4 .. 4;
// these are the nine values in the dtype's bytes.
struct CellCodes {
  char bytes[9][8];
};

CellCodes encode_cells(int32_t dtype) {
  CellCodes codes{};
  for (int k = 0; k < 9; ++k) {
    const double v = k - 4;
    if (is_float(dtype)) {
      store_float(codes.bytes[k], 0, dtype, v);
    } else {
      const int64_t x = dtype == HVD_BOOL ? (v > 0 ? 1 : 0) : static_cast<int64_t>(v + 4);
      std::memcpy(codes.bytes[k], &x, dtype_bytes(dtype));
    }
  }
  return codes;
}

// Writes the cells of `rows` rows from row 0 on. Each cell is one of nine codes, found by
// stepping the index (a division and a conversion per cell made the 16 MiB cases of broadcast
// and allgather take seconds at np 4 on 2 cores); the element size is a constant per instance.
template <size_t kSize>
void write_cells(char* out, const CellCodes& codes, int rank, int64_t rows, int64_t cols) {
  int row_start = rank * 7 % 9;
  for (int64_t row = 0; row < rows; ++row, row_start = (row_start + 3) % 9) {
    int k = row_start;
    for (int64_t col = 0; col < cols; ++col, out += kSize) {
      std::memcpy(out, codes.bytes[k], kSize);
      k = k == 8 ? 0 : k + 1;
    }
  }
}

void fill_rows(std::vector<char>& buf, int32_t dtype, int rank, int64_t rows, int64_t cols) {
  const size_t esize = dtype_bytes(dtype);
  buf.assign(static_cast<size_t>(rows * cols) * esize + 1, 0);
  const CellCodes codes = encode_cells(dtype);
  switch (esize) {
    case 1:
      return write_cells<1>(buf.data(), codes, rank, rows, cols);
    case 2:
      return write_cells<2>(buf.data(), codes, rank, rows, cols);
    case 4:
      return write_cells<4>(buf.data(), codes, rank, rows, cols);
    default:
      return write_cells<8>(buf.data(), codes, rank, rows, cols);
  }
}

void* allocate(void* user, const hvd_tensor_t*, size_t bytes) {
  auto* store = static_cast<std::vector<char>*>(user);
  store->assign(bytes + 1, 0);
  return store->data();
}

bool check_allgather(int32_t dtype, int64_t base, int64_t cols, bool own_alloc, std::string* why) {
  std::vector<char> in;
  const int64_t my_rows = rows_of(hvd_rank(), base);
  fill_rows(in, dtype, hvd_rank(), my_rows, cols);
  std::vector<int64_t> shape = {my_rows, cols};
  hvd_tensor_t t = make_tensor(in.data(), dtype, shape);
  std::vector<char> store;
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  if (own_alloc) {
    args.alloc = allocate;
    args.alloc_user_data = &store;
  }
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allgather_async(&t, nullptr, &args, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  hvd_tensor_t out{};
  if (s == HVD_SUCCESS) s = hvd_handle_output(h, &out);
  bool ok = s == HVD_SUCCESS;
  if (!ok) *why = status_text(s);
  int64_t total = 0;
  for (int r = 0; r < hvd_size(); ++r) total += rows_of(r, base);
  ok = ok && out.ndim == 2 && out.shape[0] == total && out.shape[1] == cols && out.dtype == dtype;
  ok = ok && (!own_alloc || total == 0 || out.data == store.data());
  std::vector<char> want;
  int64_t offset = 0;
  for (int r = 0; ok && r < hvd_size(); ++r) {
    fill_rows(want, dtype, r, rows_of(r, base), cols);
    const size_t bytes = static_cast<size_t>(rows_of(r, base) * cols) * dtype_bytes(dtype);
    ok = bytes == 0 || std::memcmp(static_cast<char*>(out.data) + offset, want.data(), bytes) == 0;
    if (!ok) *why = "block of rank " + std::to_string(r) + " differs";
    offset += static_cast<int64_t>(bytes);
  }
  if (h) hvd_handle_free(h);
  return ok;
}

bool check_broadcast(int32_t dtype, int64_t count, int root, bool in_place, std::string* why) {
  std::vector<char> in, out(static_cast<size_t>(count) * dtype_bytes(dtype) + 1, 0);
  fill_rows(in, dtype, hvd_rank(), count, 1);
  std::vector<int64_t> shape = {count};
  hvd_tensor_t t = make_tensor(in.data(), dtype, shape);
  void* dst = in_place ? in.data() : out.data();
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_broadcast_async(&t, dst, root, nullptr, nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h) hvd_handle_free(h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  std::vector<char> want;
  fill_rows(want, dtype, root, count, 1);
  const size_t bytes = static_cast<size_t>(count) * dtype_bytes(dtype);
  if (bytes == 0 || std::memcmp(dst, want.data(), bytes) == 0) return true;
  *why = "data differs from root " + std::to_string(root) + "'s";
  return false;
}

}  // namespace

void test_allgather(Results& results) {
  for (int32_t dtype = HVD_UINT8; dtype <= HVD_BFLOAT16; ++dtype) {
    bool ok = true;
    std::string why;
    for (int64_t base : suite_sizes(dtype)) {
      for (int64_t cols : {int64_t{1}, int64_t{3}}) {
        if (cols == 3 && base > 100000) continue;  // 3x the largest sizes adds time, not coverage
        if (ok && !check_allgather(dtype, base, cols, (base + cols) % 2 == 0, &why)) {
          ok = false;
          why = "rows " + std::to_string(base) + " cols " + std::to_string(cols) + ": " + why;
        }
      }
    }
    record(results, std::string("allgather.") + dtype_label(dtype), ok, why);
  }
}

void test_broadcast(Results& results) {
  for (int32_t dtype = HVD_UINT8; dtype <= HVD_BFLOAT16; ++dtype) {
    bool ok = true;
    std::string why;
    for (int root = 0; ok && root < hvd_size(); ++root) {
      for (int64_t count : suite_sizes(dtype)) {
        if (ok && !check_broadcast(dtype, count, root, count % 2 == 1, &why)) {
          ok = false;
          why = "root " + std::to_string(root) + " count " + std::to_string(count) + ": " + why;
        }
      }
    }
    record(results, std::string("broadcast.") + dtype_label(dtype), ok, why);
  }
}

void test_allgather_reduced(Results& results) {
  for (int32_t dtype : reduced_dtypes()) {
    bool ok = true;
    std::string why;
    for (int64_t base : reduced_sizes(hvd_size())) {
      if (ok && !check_allgather(dtype, base, 1, base % 2 == 1, &why)) {
        ok = false;
        why = "rows " + std::to_string(base) + ": " + why;
      }
    }
    record(results, std::string("allgather.") + dtype_label(dtype), ok, why);
  }
}

void test_broadcast_reduced(Results& results) {
  for (int32_t dtype : reduced_dtypes()) {
    bool ok = true;
    std::string why;
    for (int root = 0; ok && root < hvd_size(); ++root) {
      for (int64_t count : reduced_sizes(hvd_size())) {
        if (ok && !check_broadcast(dtype, count, root, count % 2 == 1, &why)) {
          ok = false;
          why = "root " + std::to_string(root) + " count " + std::to_string(count) + ": " + why;
        }
      }
    }
    record(results, std::string("broadcast.") + dtype_label(dtype), ok, why);
  }
}

void test_barrier(Results& results) {
  bool ok = true;
  std::string why;
  for (int i = 0; i < 20 && ok; ++i) {
    hvd_handle_t h = 0;
    hvd_status_t s = hvd_barrier_async(nullptr, nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    if (h) hvd_handle_free(h);
    ok = s == HVD_SUCCESS;
    if (!ok) why = status_text(s);
  }
  record(results, "barrier.20_in_a_row", ok, why);
}

}  // namespace hvdc_test
