// Every collective of hvdc.hpp in each of its forms (Tensor, pointer + count, std::vector; sync
// and async), with the values checked on every rank.
#include <atomic>
#include <cstdint>
#include <vector>

#include "cases.h"
#include "check.h"

namespace cxx_test {

namespace {

// IEEE half bit patterns of 1, 2, 3 and 4 (sums of ones at np 1 to 4).
uint16_t half_of_small_int(int v) {
  const uint16_t bits[] = {0x0000, 0x3C00, 0x4000, 0x4200, 0x4400};
  return v >= 0 && v <= 4 ? bits[v] : 0xFFFF;
}

std::atomic<int> g_done_calls{0};
void count_done(void* user_data, hvd_handle_t, hvd_status_t status) {
  if (status == HVD_SUCCESS && user_data == &g_done_calls) ++g_done_calls;
}

std::vector<int32_t> g_alloc_buffer;
void* alloc_from_vector(void*, const hvd_tensor_t*, size_t bytes) {
  g_alloc_buffer.assign(bytes / sizeof(int32_t), 0);
  return g_alloc_buffer.data();
}

}  // namespace

void test_allreduce() {
  const int n = hvdc::size(), r = hvdc::rank();
  std::vector<float> grad(1000, static_cast<float>(r));
  hvdc::allreduce(grad, hvdc::ReduceOp::Sum, {"cxx.sum"});
  EXPECT_EQ(grad[999], static_cast<float>(n * (n - 1) / 2));

  const std::vector<int32_t> in = {r, -r, 7};
  std::vector<int32_t> out;
  hvdc::allreduce(in, out, hvdc::ReduceOp::Min, {"cxx.min"});
  EXPECT(out == (std::vector<int32_t>{0, -(n - 1), 7}));
  hvdc::allreduce(in, out, hvdc::ReduceOp::Max, {"cxx.max"});
  EXPECT(out == (std::vector<int32_t>{n - 1, 0, 7}));

  int64_t product_in[2] = {2, r + 1}, product_out[2] = {0, 0};
  hvdc::allreduce(product_in, product_out, 2, hvdc::ReduceOp::Product, {"cxx.product"});
  int64_t factorial = 1;
  for (int i = 1; i <= n; ++i) factorial *= i;
  EXPECT_EQ(product_out[0], int64_t{1} << n);
  EXPECT_EQ(product_out[1], factorial);

  std::vector<double> scaled(3, 1.0);  // (1 * 2) summed over n ranks, then * 0.25
  hvdc::Options opts{"cxx.scaled"};
  opts.prescale_factor = 2.0;
  opts.postscale_factor = 0.25;
  hvdc::allreduce(scaled, hvdc::ReduceOp::Sum, opts);
  EXPECT_EQ(scaled[2], 0.5 * n);

  std::vector<double> average(5, static_cast<double>(r));
  hvdc::allreduce(average);  // ReduceOp::Average and an automatic name
  EXPECT_EQ(average[4], (n - 1) / 2.0);

  std::vector<hvdc::Float16> half(4, hvdc::Float16{half_of_small_int(1)});
  hvdc::allreduce(half, hvdc::ReduceOp::Sum, {"cxx.half"});
  EXPECT_EQ(half[3].bits, half_of_small_int(n));
  std::vector<hvdc::Bool> flags = {{0}, {static_cast<uint8_t>(r == 0)}};
  hvdc::allreduce(flags, hvdc::ReduceOp::Sum, {"cxx.or"});
  EXPECT(flags[0].value == 0 && flags[1].value == 1);
}

void test_allreduce_async() {
  const int n = hvdc::size();
  std::vector<float> a(64, 1.0f), b(64, 2.0f);
  hvdc::Handle ha = hvdc::allreduce_async(a, hvdc::ReduceOp::Sum, {"cxx.async.a"});
  hvdc::Handle hb =
      hvdc::allreduce_async(b.data(), b.data(), b.size(), hvdc::ReduceOp::Sum, {"cxx.async.b"});
  while (!ha.test()) {
  }
  EXPECT(ha.test());  // stays done
  hvdc::Handle moved = std::move(hb);
  EXPECT(!hb && moved);
  moved.wait();
  EXPECT_EQ(a[63], static_cast<float>(n));
  EXPECT_EQ(b[0], 2.0f * static_cast<float>(n));

  std::vector<hvdc::Handle> handles;
  std::vector<std::vector<int32_t>> bufs(3, std::vector<int32_t>(10, 1));
  for (size_t i = 0; i < bufs.size(); ++i) {
    handles.push_back(
        hvdc::allreduce_async(bufs[i], hvdc::ReduceOp::Sum, {"cxx.waitall." + std::to_string(i)}));
  }
  hvdc::wait_all(handles);
  for (const auto& buf : bufs) EXPECT_EQ(buf[9], n);

  hvdc::Options with_callback{"cxx.on_done"};
  with_callback.on_done = count_done;
  with_callback.on_done_user_data = &g_done_calls;
  std::vector<float> c(8, 1.0f);
  hvdc::Handle hc = hvdc::allreduce_async(c, hvdc::ReduceOp::Sum, with_callback);
  hc.wait();
  EXPECT_EQ(g_done_calls.load(), 1);
  hvdc::Handle released(hc.release());  // ownership passes on; free() reports success
  released.free();
  EXPECT(!released);
}

void test_grouped_allreduce() {
  const int n = hvdc::size(), r = hvdc::rank();
  std::vector<std::vector<float>> grads = {std::vector<float>(3, 1.0f),
                                           std::vector<float>(1000, static_cast<float>(r)),
                                           std::vector<float>(1, 4.0f)};
  hvdc::grouped_allreduce(grads, hvdc::ReduceOp::Sum, {"cxx.grouped"});
  EXPECT_EQ(grads[0][2], static_cast<float>(n));
  EXPECT_EQ(grads[1][999], static_cast<float>(n * (n - 1) / 2));
  EXPECT_EQ(grads[2][0], 4.0f * static_cast<float>(n));

  const int64_t x[4] = {1, 2, 3, 4};
  int64_t y[4] = {0, 0, 0, 0};
  const int32_t z[2] = {r, r};
  int32_t w[2] = {0, 0};
  hvdc::Handle h = hvdc::grouped_allreduce_async({hvdc::Tensor(x, {2, 2}), hvdc::Tensor(z, 2)},
                                                 {y, w}, hvdc::ReduceOp::Max, {});
  h.wait();
  EXPECT_EQ(y[3], 4);
  EXPECT_EQ(w[1], n - 1);
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "outputs",
               hvdc::grouped_allreduce_async({hvdc::Tensor(x, 4)}, {}, hvdc::ReduceOp::Sum));
}

void test_allgather() {
  const int n = hvdc::size(), r = hvdc::rank();
  // Rank i contributes i + 1 copies of i.
  const std::vector<int32_t> mine(static_cast<size_t>(r + 1), r);
  std::vector<int32_t> want;
  for (int i = 0; i < n; ++i) want.insert(want.end(), static_cast<size_t>(i + 1), i);
  EXPECT(hvdc::allgather(mine, {"cxx.gather"}) == want);
  EXPECT(hvdc::allgather(mine.data(), mine.size(), {"cxx.gather.ptr"}) == want);

  // Two rows of three per rank: the output is (2n, 3), row-major.
  const double rows[6] = {1.0 * r, 1, 2, 10.0 * r, 11, 12};
  hvdc::Handle h = hvdc::allgather_async(hvdc::Tensor(rows, {2, 3}), {"cxx.gather.rows"});
  h.wait();
  const hvdc::Tensor out = h.output();
  EXPECT(out.dtype() == hvdc::DType::Float64);
  EXPECT(out.shape() == (std::vector<int64_t>{2 * n, 3}));
  const std::vector<double> values = h.output_vector<double>();
  EXPECT_EQ(values.size(), static_cast<size_t>(6 * n));
  EXPECT_EQ(values[static_cast<size_t>(6 * (n - 1) + 3)], 10.0 * (n - 1));
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "output_vector", h.output_vector<float>());

  hvdc::Options with_alloc{"cxx.gather.alloc"};
  with_alloc.alloc = alloc_from_vector;
  hvdc::Handle ha = hvdc::allgather_async(mine, with_alloc);
  ha.wait();
  EXPECT(ha.output().data() == g_alloc_buffer.data());
  EXPECT(g_alloc_buffer == want);
}

void test_broadcast() {
  const int n = hvdc::size(), r = hvdc::rank();
  const int root = n - 1;
  std::vector<int64_t> params = {r * 10, r * 10 + 1};
  hvdc::broadcast(params, root, {"cxx.bcast"});
  EXPECT(params == (std::vector<int64_t>{root * 10, root * 10 + 1}));

  const float in[3] = {static_cast<float>(r), 5, 6};
  float out[3] = {-1, -1, -1};
  hvdc::broadcast(in, out, 3, 0, {"cxx.bcast.ptr"});
  EXPECT(out[0] == 0.0f && out[2] == 6.0f);

  uint8_t grid[2][2] = {{static_cast<uint8_t>(r), 1}, {2, 3}};
  hvdc::Handle h = hvdc::broadcast_async(hvdc::Tensor(&grid[0][0], {2, 2}), &grid[0][0], root,
                                         {"cxx.bcast.tensor"});
  h.wait();
  EXPECT_EQ(grid[0][0], root);
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "root_rank", hvdc::broadcast(params, n, {"cxx.bad"}));
}

void test_alltoall() {
  const int n = hvdc::size(), r = hvdc::rank();
  // Even split: two elements to each rank, valued 100 * source + destination.
  std::vector<int32_t> even;
  for (int dst = 0; dst < n; ++dst) even.insert(even.end(), 2, 100 * r + dst);
  const auto result = hvdc::alltoall(even, {}, {"cxx.a2a"});
  std::vector<int32_t> want;
  for (int src = 0; src < n; ++src) want.insert(want.end(), 2, 100 * src + r);
  EXPECT(result.data == want);
  EXPECT(result.received_splits == std::vector<int32_t>(static_cast<size_t>(n), 2));

  // Uneven: rank r sends dst + 1 elements to each dst.
  std::vector<int32_t> splits, uneven;
  for (int dst = 0; dst < n; ++dst) {
    splits.push_back(dst + 1);
    uneven.insert(uneven.end(), static_cast<size_t>(dst + 1), 100 * r + dst);
  }
  hvdc::Handle h = hvdc::alltoall_async(uneven, splits, {"cxx.a2a.uneven"});
  h.wait();
  EXPECT(h.received_splits() == std::vector<int32_t>(static_cast<size_t>(n), r + 1));
  want.clear();
  for (int src = 0; src < n; ++src)
    want.insert(want.end(), static_cast<size_t>(r + 1), 100 * src + r);
  EXPECT(h.output_vector<int32_t>() == want);
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "splits",
               hvdc::alltoall(uneven, std::vector<int32_t>(static_cast<size_t>(n + 1), 0)));
}

void test_reducescatter() {
  const int n = hvdc::size(), r = hvdc::rank();
  // 2n + 1 rows: rank 0 gets three, the others two. Element i holds i on every rank.
  std::vector<float> in(static_cast<size_t>(2 * n + 1));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  const std::vector<float> mine = hvdc::reducescatter(in, hvdc::ReduceOp::Sum, {"cxx.rs"});
  const int64_t rows = hvdc::reducescatter_rows(static_cast<int64_t>(in.size()));
  EXPECT_EQ(rows, r == 0 ? 3 : 2);
  EXPECT_EQ(mine.size(), static_cast<size_t>(rows));
  const int first = r == 0 ? 0 : 2 * r + 1;
  for (size_t i = 0; i < mine.size(); ++i) {
    EXPECT_EQ(mine[i], static_cast<float>((first + static_cast<int>(i)) * n));
  }

  const int32_t matrix[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};  // 4 rows of 2
  std::vector<int32_t> out(static_cast<size_t>(2 * hvdc::reducescatter_rows(4)));
  hvdc::Handle h = hvdc::reducescatter_async(hvdc::Tensor(&matrix[0][0], {4, 2}), out.data(),
                                             hvdc::ReduceOp::Average, {"cxx.rs.avg"});
  h.wait();
  const int first_row = static_cast<int>(4 / n * r + (r < 4 % n ? r : 4 % n));
  EXPECT_EQ(out[0], matrix[first_row][0]);
  EXPECT_EQ(out.back(), matrix[first_row + static_cast<int>(out.size()) / 2 - 1][1]);
}

void test_barrier_and_join() {
  const int n = hvdc::size(), r = hvdc::rank();
  hvdc::barrier({"cxx.barrier"});
  hvdc::Handle h = hvdc::barrier_async();
  h.wait();
  // Rank 0 joins at once; the others allreduce without it (it adds zeros), then join.
  if (r != 0) {
    std::vector<int32_t> v(4, 5);
    hvdc::allreduce(v, hvdc::ReduceOp::Sum, {"cxx.join.sum"});
    EXPECT_EQ(v[0], 5 * (n - 1));
  }
  const int32_t last = hvdc::join();
  EXPECT(last >= 0 && last < n && (n == 1 || last != 0));
}

}  // namespace cxx_test
