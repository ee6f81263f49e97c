// Process sets, every collective inside a set with set-relative semantics (average divisor,
// broadcast root, allgather order, alltoall splits, reducescatter rows), and every collective
// rejected at the call on a rank that is not a member, naming the set. Part of the
// test_process_sets scenario (test_process_sets.cc).
#include <algorithm>
#include <string>
#include <vector>

#include "harness.h"
#include "process_set_helpers.h"

namespace hvdc_test {

namespace {

bool set_int_average(const SetView& v, const std::string& name, std::string* why) {
  const int me = hvd_rank(), k = v.size();
  std::vector<int32_t> buf(9);
  for (int i = 0; i < 9; ++i) buf[i] = me * 10 + i % 4;
  std::vector<int64_t> shape = {9};
  hvd_tensor_t t = make_tensor(buf.data(), HVD_INT32, shape);
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  const hvd_status_t s =
      wait_free(hvd_allreduce_async(&t, buf.data(), HVD_OP_AVERAGE, name.c_str(), &args, &h), &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  for (int i = 0; i < 9; ++i) {
    int32_t sum = 0;
    for (int32_t g : v.members) sum += g * 10 + i % 4;
    if (buf[i] != sum / k) {
      *why = "element " + std::to_string(i) + ": got " + std::to_string(buf[i]) + ", expected " +
             std::to_string(sum / k) + " (the sum over " + std::to_string(k) + " members / " +
             std::to_string(k) + ")";
      return false;
    }
  }
  return true;
}

// Broadcast from the set's last rank (set rank k - 1, global rank members[k - 1]).
bool set_broadcast(const SetView& v, const std::string& name, std::string* why) {
  const int me = hvd_rank(), k = v.size();
  std::vector<float> in(5), out(5, -1.0f);
  for (int i = 0; i < 5; ++i) in[i] = static_cast<float>(me * 100 + i);
  std::vector<int64_t> shape = {5};
  hvd_tensor_t t = make_tensor(in.data(), HVD_FLOAT32, shape);
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  const hvd_status_t s =
      wait_free(hvd_broadcast_async(&t, out.data(), k - 1, name.c_str(), &args, &h), &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  for (int i = 0; i < 5; ++i) {
    if (out[i] != static_cast<float>(v.members[k - 1] * 100 + i)) {
      *why = "element " + std::to_string(i) + ": got " + std::to_string(out[i]) +
             ", expected global rank " + std::to_string(v.members[k - 1]) + "'s data";
      return false;
    }
  }
  return true;
}

// root_rank counts within the set: the set's size is out of range even where it is a valid
// global rank.
bool set_broadcast_bad_root(const SetView& v, const std::string& name, std::string* why) {
  std::vector<float> buf(4, 1.0f);
  std::vector<int64_t> shape = {4};
  hvd_tensor_t t = make_tensor(buf.data(), HVD_FLOAT32, shape);
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = kSentinelHandle;
  bool ok = expect_rejected(hvd_broadcast_async(&t, buf.data(), v.size(), name.c_str(), &args, &h),
                            &h, HVD_ERR_INVALID_ARGUMENT, "root_rank", "root_rank = set size", why);
  h = kSentinelHandle;
  ok &= expect_rejected(hvd_broadcast_async(&t, buf.data(), -1, name.c_str(), &args, &h), &h,
                        HVD_ERR_INVALID_ARGUMENT, "root_rank", "root_rank = -1", why);
  return ok;
}

// Set rank s contributes s + 1 rows; the result is in set-rank order.
bool set_allgather(const SetView& v, const std::string& name, std::string* why) {
  const int me = hvd_rank(), k = v.size();
  const int64_t rows = v.index + 1;
  std::vector<int32_t> in(rows * 2);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t col = 0; col < 2; ++col) in[row * 2 + col] = me * 1000 + row * 10 + col;
  }
  std::vector<int64_t> shape = {rows, 2};
  hvd_tensor_t t = make_tensor(in.data(), HVD_INT32, shape);
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allgather_async(&t, name.c_str(), &args, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  hvd_tensor_t out = {};
  if (s == HVD_SUCCESS) s = hvd_handle_output(h, &out);
  bool ok = s == HVD_SUCCESS;
  if (!ok) *why = status_text(s);
  const int64_t total = static_cast<int64_t>(k) * (k + 1) / 2;
  if (ok &&
      (out.ndim != 2 || out.shape[0] != total || out.shape[1] != 2 || out.dtype != HVD_INT32)) {
    *why = "output shape [" + std::to_string(out.ndim > 0 ? out.shape[0] : -1) + ", ...], " +
           "expected [" + std::to_string(total) + ", 2]";
    ok = false;
  }
  const int32_t* got = ok ? static_cast<const int32_t*>(out.data) : nullptr;
  int64_t at = 0;
  for (int src = 0; ok && src < k; ++src) {
    for (int64_t row = 0; ok && row <= src; ++row) {
      for (int64_t col = 0; ok && col < 2; ++col) {
        ok = got[at++] == v.members[src] * 1000 + row * 10 + col;
        if (!ok) *why = "rows of set rank " + std::to_string(src) + " out of place";
      }
    }
  }
  if (h != 0) hvd_handle_free(h);
  return ok;
}

int32_t a2a_value(int src_global, int dst_set_rank, int64_t row, int64_t col) {
  return static_cast<int32_t>(src_global * 1000000 + dst_set_rank * 10000 + row * 10 + col);
}

// Splits and received splits have one entry per set rank.
bool set_alltoall(const SetView& v, bool even, const std::string& name, std::string* why) {
  const int me = hvd_rank(), k = v.size();
  constexpr int64_t kCols = 3;
  auto rows_to = [&](int src, int dst) { return even ? 2 : (src + dst + 1) % 3; };
  std::vector<int32_t> splits(k), in;
  for (int dst = 0; dst < k; ++dst) {
    splits[dst] = rows_to(v.index, dst);
    for (int64_t row = 0; row < splits[dst]; ++row) {
      for (int64_t col = 0; col < kCols; ++col) in.push_back(a2a_value(me, dst, row, col));
    }
  }
  in.push_back(0);  // never empty, so data is never NULL
  std::vector<int64_t> shape = {static_cast<int64_t>(in.size() - 1) / kCols, kCols};
  hvd_tensor_t t = make_tensor(in.data(), HVD_INT32, shape);
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_alltoall_async(&t, even ? nullptr : splits.data(), name.c_str(), &args, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  hvd_tensor_t out = {};
  std::vector<int32_t> received(k, -1);
  if (s == HVD_SUCCESS) s = hvd_handle_output(h, &out);
  if (s == HVD_SUCCESS) s = hvd_handle_received_splits(h, received.data(), k);
  bool ok = s == HVD_SUCCESS;
  if (!ok) *why = status_text(s);
  const int32_t* got = ok ? static_cast<const int32_t*>(out.data) : nullptr;
  int64_t at = 0;
  for (int src = 0; ok && src < k; ++src) {
    ok = received[src] == rows_to(src, v.index);
    for (int64_t row = 0; ok && row < rows_to(src, v.index); ++row) {
      for (int64_t col = 0; ok && col < kCols; ++col) {
        ok = got[at++] == a2a_value(v.members[src], v.index, row, col);
      }
    }
    if (!ok) *why = "wrong rows or splits from set rank " + std::to_string(src);
  }
  if (ok && out.shape[0] * kCols != at) *why = "output shape", ok = false;
  if (h != 0) hvd_handle_free(h);
  return ok;
}

// 2k + 1 rows over k set ranks: set rank 0 gets one row more (k > 1).
bool set_reducescatter(const SetView& v, int32_t op, const std::string& name, std::string* why) {
  const int me = hvd_rank(), k = v.size();
  constexpr int64_t kCols = 3;
  const int64_t rows = 2 * k + 1;
  std::vector<float> in(rows * kCols);
  for (int64_t i = 0; i < rows * kCols; ++i) in[i] = static_cast<float>(me + 1 + i % 7);
  int64_t first = 0;
  for (int r = 0; r < v.index; ++r) first += rows / k + (r < rows % k ? 1 : 0);
  const int64_t mine = rows / k + (v.index < rows % k ? 1 : 0);
  std::vector<float> out(mine * kCols + 1, -1.0f);
  std::vector<int64_t> shape = {rows, kCols};
  hvd_tensor_t t = make_tensor(in.data(), HVD_FLOAT32, shape);
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  const hvd_status_t s =
      wait_free(hvd_reducescatter_async(&t, out.data(), op, name.c_str(), &args, &h), &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  for (int64_t i = 0; i < mine * kCols; ++i) {
    const int64_t g = first * kCols + i;
    double want = 0;
    for (int32_t r : v.members) want += r + 1 + g % 7;
    if (op == HVD_OP_AVERAGE) want /= k;
    if (!close_to(out[i], want)) {
      *why = "element " + std::to_string(i) + " of set rank " + std::to_string(v.index) +
             "'s rows: " + std::to_string(out[i]) + " != " + std::to_string(want);
      return false;
    }
  }
  if (out[mine * kCols] != -1.0f) *why = "wrote past this rank's rows";
  return out[mine * kCols] == -1.0f;
}

bool set_barrier(const SetView& v, const std::string& name, std::string* why) {
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  const hvd_status_t s = wait_free(hvd_barrier_async(name.c_str(), &args, &h), &h);
  if (s != HVD_SUCCESS) *why = status_text(s);
  return s == HVD_SUCCESS;
}

bool set_grouped(const SetView& v, const std::string& name, std::string* why) {
  const size_t counts[3] = {1, 100, 5000};
  std::vector<std::vector<float>> bufs(3);
  std::vector<int64_t> shapes[3];
  std::vector<hvd_tensor_t> ts;
  std::vector<void*> outs;
  std::vector<std::string> names;
  for (int j = 0; j < 3; ++j) {
    bufs[j].resize(counts[j]);
    for (size_t i = 0; i < counts[j]; ++i) bufs[j][i] = input_value(hvd_rank(), i, 40 + j);
    shapes[j] = {static_cast<int64_t>(counts[j])};
    ts.push_back(make_tensor(bufs[j].data(), HVD_FLOAT32, shapes[j]));
    outs.push_back(bufs[j].data());
    names.push_back(name + "." + std::to_string(j));
  }
  const char* name_ptrs[3] = {names[0].c_str(), names[1].c_str(), names[2].c_str()};
  const hvd_op_args_t args = args_for(v.id);
  hvd_handle_t h = 0;
  const hvd_status_t s = wait_free(
      hvd_grouped_allreduce_async(ts.data(), outs.data(), 3, HVD_OP_SUM, name_ptrs, &args, &h), &h);
  if (s != HVD_SUCCESS) {
    *why = status_text(s);
    return false;
  }
  for (int j = 0; j < 3; ++j) {
    for (size_t i = 0; i < counts[j]; ++i) {
      double want = 0;
      for (int32_t g : v.members) want += input_value(g, i, 40 + j);
      if (bufs[j][i] != static_cast<float>(want)) {
        *why = "member " + std::to_string(j) + ", element " + std::to_string(i);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

// Every collective on set v; non-members record passes.
void test_set_collectives(Results& results, const SetView& v, const std::string& label) {
  const std::string p = "sets." + label + ".";
  const std::string n = "ps." + label + ".";
  auto run = [&](const char* what, auto fn) {
    std::string why;
    const bool ok = !v.member() || fn(&why);
    record(results, p + what, ok, why);
  };
  run("allreduce_sum",
      [&](std::string* why) { return run_one(v, n + "sum", 1000, HVD_OP_SUM, 3, why); });
  run("allreduce_average_divides_by_set_size",
      [&](std::string* why) { return run_one(v, n + "avg", 1000, HVD_OP_AVERAGE, 4, why); });
  run("allreduce_int_average",
      [&](std::string* why) { return set_int_average(v, n + "iavg", why); });
  run("broadcast_root_is_set_rank",
      [&](std::string* why) { return set_broadcast(v, n + "bcast", why); });
  run("broadcast_root_outside_set",
      [&](std::string* why) { return set_broadcast_bad_root(v, n + "bcast.bad", why); });
  run("allgather_in_set_order",
      [&](std::string* why) { return set_allgather(v, n + "gather", why); });
  run("alltoall_even",
      [&](std::string* why) { return set_alltoall(v, true, n + "a2a.even", why); });
  run("alltoall_splits_per_set_rank",
      [&](std::string* why) { return set_alltoall(v, false, n + "a2a.uneven", why); });
  run("reducescatter_sum",
      [&](std::string* why) { return set_reducescatter(v, HVD_OP_SUM, n + "rs.sum", why); });
  run("reducescatter_average",
      [&](std::string* why) { return set_reducescatter(v, HVD_OP_AVERAGE, n + "rs.avg", why); });
  run("barrier", [&](std::string* why) { return set_barrier(v, n + "barrier", why); });
  run("grouped_allreduce", [&](std::string* why) { return set_grouped(v, n + "grp", why); });
}
void test_non_member(Results& results, const SetView& v, const std::string& label) {
  std::string why;
  const bool ok = v.member() || rejected_everywhere(v.id, set_text(v.id), "ps.nm." + label, &why);
  record(results, "sets." + label + ".non_member_rejected_at_call", ok, why);
}

}  // namespace hvdc_test
