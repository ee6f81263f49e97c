// Alltoall (even and uneven splits, received splits), reducescatter (uneven first dimension,
// sum/average, scale factors) and grouped allreduce, each with Horovod's error cases: local
// errors fail at the call, negotiated ones on every rank, and a correct op follows.
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

constexpr int64_t kCols = 3;

// Element (row, col) that rank `src` sends to rank `dst`: exact in int32.
int32_t a2a_value(int src, int dst, int64_t row, int64_t col) {
  return static_cast<int32_t>(src * 1000000 + dst * 10000 + row * 10 + col);
}

// Takes the handle by pointer: it is read only after the submitting call (an argument in the
// same call) has written it.
hvd_status_t wait_free(hvd_status_t s, const hvd_handle_t* h) {
  if (s == HVD_SUCCESS) s = hvd_wait(*h);
  if (*h != 0) hvd_handle_free(*h);
  return s;
}

// Rank r sends rows_to(r, i) rows to rank i.
bool run_alltoall(bool even, std::string* why) {
  const int n = hvd_size(), me = hvd_rank();
  auto rows_to = [&](int src, int dst) { return even ? 2 : (dst + src) % 3; };
  std::vector<int32_t> splits(n), in;
  for (int dst = 0; dst < n; ++dst) {
    splits[dst] = rows_to(me, dst);
    for (int64_t row = 0; row < splits[dst]; ++row) {
      for (int64_t col = 0; col < kCols; ++col) in.push_back(a2a_value(me, dst, row, col));
    }
  }
  std::vector<int64_t> shape = {static_cast<int64_t>(in.size()) / kCols, kCols};
  hvd_tensor_t t = make_tensor(in.data(), HVD_INT32, shape);
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_alltoall_async(&t, even ? nullptr : splits.data(),
                                      even ? "a2a.even" : "a2a.uneven", nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  hvd_tensor_t out = {};
  std::vector<int32_t> received(n, -1);
  if (s == HVD_SUCCESS) s = hvd_handle_output(h, &out);
  if (s == HVD_SUCCESS) s = hvd_handle_received_splits(h, received.data(), n);
  bool ok = s == HVD_SUCCESS;
  if (!ok) *why = status_text(s);
  const int32_t* got = ok ? static_cast<const int32_t*>(out.data) : nullptr;
  int64_t at = 0;
  for (int src = 0; ok && src < n; ++src) {
    ok = received[src] == rows_to(src, me);
    for (int64_t row = 0; ok && row < rows_to(src, me); ++row) {
      for (int64_t col = 0; ok && col < kCols; ++col)
        ok = got[at++] == a2a_value(src, me, row, col);
    }
    if (!ok) *why = "wrong rows or splits from rank " + std::to_string(src);
  }
  if (ok && out.shape[0] * kCols != at) *why = "output shape", ok = false;
  hvd_handle_free(h);
  return ok;
}

hvd_status_t alltoall_of(std::vector<float>& buf, std::vector<int64_t> shape, int32_t dtype,
                         const int32_t* splits) {
  hvd_tensor_t t = make_tensor(buf.data(), dtype, shape);
  hvd_handle_t h = 0;
  return wait_free(hvd_alltoall_async(&t, splits, "a2a.err", nullptr, &h), &h);
}

void alltoall_errors(Results& results) {
  const int n = hvd_size(), me = hvd_rank();
  std::vector<float> buf(64, 1.0f);
  if (n > 1) {
    hvd_status_t s = alltoall_of(buf, {n * 2 + 1, 2}, HVD_FLOAT32, nullptr);
    record(results, "alltoall.equal_split_length_error", s == HVD_ERR_INVALID_ARGUMENT,
           status_text(s));
  }
  std::vector<int32_t> bad(n, 1);
  hvd_status_t s = alltoall_of(buf, {n + 1, 2}, HVD_FLOAT32, bad.data());
  record(results, "alltoall.splits_error", s == HVD_ERR_INVALID_ARGUMENT, status_text(s));
  s = alltoall_of(buf, {}, HVD_FLOAT32, nullptr);
  record(results, "alltoall.scalar_error", s == HVD_ERR_INVALID_ARGUMENT, status_text(s));
  if (n > 1) {
    s = alltoall_of(buf, {n, 2}, me == 0 ? HVD_FLOAT32 : HVD_INT32, nullptr);
    record(results, "alltoall.type_error", s == HVD_ERR_MISMATCH, status_text(s));
    s = alltoall_of(buf, {n, me == 0 ? 2 : 3}, HVD_FLOAT32, nullptr);
    record(results, "alltoall.rank_error", s == HVD_ERR_MISMATCH, status_text(s));
  }
}

// Rows 2n+1 of kCols float32: the first (2n+1) % n = 1 rank gets 3 rows, the others 2.
bool run_reducescatter(int32_t op, double pre, double post, std::string* why) {
  const int n = hvd_size(), me = hvd_rank();
  const int64_t rows = 2 * n + 1;
  std::vector<float> in(rows * kCols);
  for (int64_t i = 0; i < rows * kCols; ++i) in[i] = static_cast<float>(me + 1 + i % 7);
  int64_t first = 0;
  for (int r = 0; r < me; ++r) first += rows / n + (r < rows % n ? 1 : 0);
  const int64_t mine = rows / n + (me < rows % n ? 1 : 0);
  std::vector<float> out(mine * kCols + 1, -1.0f);
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  args.prescale_factor = pre;
  args.postscale_factor = post;
  std::vector<int64_t> shape = {rows, kCols};
  hvd_tensor_t t = make_tensor(in.data(), HVD_FLOAT32, shape);
  hvd_handle_t h = 0;
  hvd_status_t s = wait_free(hvd_reducescatter_async(&t, out.data(), op, nullptr, &args, &h), &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  for (int64_t i = 0; i < mine * kCols; ++i) {
    const int64_t g = first * kCols + i;
    double want = 0;
    for (int r = 0; r < n; ++r) want += (r + 1 + g % 7) * pre;
    if (op == HVD_OP_AVERAGE) want /= n;
    want *= post;
    if (out[i] != static_cast<float>(want)) {
      *why = "element " + std::to_string(i) + ": " + std::to_string(out[i]) +
             " != " + std::to_string(want);
      return false;
    }
  }
  if (out[mine * kCols] != -1.0f) *why = "wrote past this rank's rows";
  return out[mine * kCols] == -1.0f;
}

void reducescatter_errors(Results& results) {
  const int n = hvd_size(), me = hvd_rank();
  std::vector<float> in(64, 1.0f), out(64);
  auto submit = [&](std::vector<int64_t> shape, int32_t dtype, int32_t op) {
    hvd_tensor_t t = make_tensor(in.data(), dtype, shape);
    hvd_handle_t h = 0;
    return wait_free(hvd_reducescatter_async(&t, out.data(), op, "rs.err", nullptr, &h), &h);
  };
  hvd_status_t s = submit({}, HVD_FLOAT32, HVD_OP_SUM);
  record(results, "reducescatter.scalar_error", s == HVD_ERR_INVALID_ARGUMENT, status_text(s));
  s = submit({4}, HVD_FLOAT32, HVD_OP_MAX);
  record(results, "reducescatter.op_error", s == HVD_ERR_INVALID_ARGUMENT, status_text(s));
  if (n > 1) {
    s = submit({me == 0 ? 4 : 5}, HVD_FLOAT32, HVD_OP_SUM);
    record(results, "reducescatter.shape_error", s == HVD_ERR_MISMATCH, status_text(s));
    s = submit({4}, me == 0 ? HVD_FLOAT32 : HVD_INT32, HVD_OP_SUM);
    record(results, "reducescatter.type_error", s == HVD_ERR_MISMATCH, status_text(s));
  }
}

hvd_status_t grouped(std::vector<std::vector<float>>& bufs, std::vector<int64_t>& counts,
                     const char* const* names, int32_t device_of_last) {
  std::vector<hvd_tensor_t> ts;
  std::vector<void*> outs;
  for (size_t k = 0; k < bufs.size(); ++k) {
    ts.push_back({bufs[k].data(), HVD_FLOAT32, 1, &counts[k], {HVD_DEVICE_CPU, 0}});
    outs.push_back(bufs[k].data());
  }
  ts.back().device.type = device_of_last;
  hvd_handle_t h = 0;
  return wait_free(hvd_grouped_allreduce_async(ts.data(), outs.data(), ts.size(), HVD_OP_SUM, names,
                                               nullptr, &h),
                   &h);
}

void test_grouped(Results& results) {
  const Case c{HVD_FLOAT32, HVD_OP_SUM};
  std::vector<int64_t> counts = {1, 1000, 70000, 0, 33};
  std::vector<std::vector<float>> bufs(counts.size());
  auto refill = [&] {
    for (size_t k = 0; k < bufs.size(); ++k) {
      bufs[k].assign(counts[k] + 1, 0.0f);
      fill_input(bufs[k].data(), counts[k], c, hvd_rank());
    }
  };
  const char* names[] = {"grp.0", "grp.1", "grp.2", "grp.3", "grp.4"};
  for (const char* const* n :
       {static_cast<const char* const*>(names), static_cast<const char* const*>(nullptr)}) {
    refill();
    hvd_status_t s = grouped(bufs, counts, n, HVD_DEVICE_CPU);
    std::string why = status_text(s);
    bool ok = s == HVD_SUCCESS;
    for (size_t k = 0; ok && k < bufs.size(); ++k) {
      ok = check_allreduce(bufs[k].data(), counts[k], c, hvd_size(), &why);
    }
    record(results, n ? "grouped.named" : "grouped.auto_names", ok, why);
  }
  const char* dup[] = {"grp.d", "grp.x", "grp.d", "grp.y", "grp.z"};
  hvd_status_t s = grouped(bufs, counts, dup, HVD_DEVICE_CPU);
  record(results, "grouped.duplicate_name_error", s == HVD_ERR_DUPLICATE_NAME, status_text(s));
  s = grouped(bufs, counts, names, HVD_DEVICE_CUDA);
  record(results, "grouped.cpu_gpu_error", s == HVD_ERR_INVALID_ARGUMENT, status_text(s));
  if (hvd_size() > 1) {
    std::vector<int64_t> skewed = counts;
    if (hvd_rank() == 0) skewed[1] = 999;
    s = grouped(bufs, skewed, names, HVD_DEVICE_CPU);
    record(results, "grouped.member_mismatch_fails_group", s == HVD_ERR_MISMATCH, status_text(s));
  }
}

}  // namespace

void test_split_ops(Results& results) {
  for (bool even : {true, false}) {
    std::string why;
    const bool ok = run_alltoall(even, &why);
    record(results, even ? "alltoall.even" : "alltoall.uneven_splits", ok, why);
  }
  alltoall_errors(results);
  std::string why;
  record(results, "alltoall.after_errors", run_alltoall(false, &why), why);
  const struct {
    const char* label;
    int32_t op;
    double pre, post;
  } cases[] = {
      {"sum", HVD_OP_SUM, 1, 1}, {"average", HVD_OP_AVERAGE, 1, 1}, {"scaled", HVD_OP_SUM, 2, 0.5}};
  for (const auto& k : cases) {
    why.clear();
    record(results, std::string("reducescatter.") + k.label,
           run_reducescatter(k.op, k.pre, k.post, &why), why);
  }
  reducescatter_errors(results);
  why.clear();
  record(results, "reducescatter.after_errors", run_reducescatter(HVD_OP_SUM, 1, 1, &why), why);
  test_grouped(results);
}

}  // namespace hvdc_test
