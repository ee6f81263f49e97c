// Ranks submitting named tensors in different orders, 1000 ops in flight, several submitting
// threads, completion callbacks and automatic names.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "harness.h"
#include "reference.h"
#include "suites.h"

namespace hvdc_test {

namespace {

// A float32 sum over named tensors of the given sizes, submitted in `order`, waited together.
bool run_named_batch(const std::string& prefix, const std::vector<size_t>& sizes,
                     const std::vector<size_t>& order, std::string* detail) {
  const size_t n = sizes.size();
  std::vector<std::vector<char>> bufs(n);
  std::vector<std::vector<int64_t>> shapes(n);
  std::vector<hvd_handle_t> handles(n, 0);
  const Case c{HVD_FLOAT32, HVD_OP_SUM};
  for (size_t k : order) {
    bufs[k].resize(sizes[k] * 4 + 1);
    fill_input(bufs[k].data(), sizes[k], c, hvd_rank());
    shapes[k] = {static_cast<int64_t>(sizes[k])};
    hvd_tensor_t t = make_tensor(bufs[k].data(), HVD_FLOAT32, shapes[k]);
    const std::string name = prefix + std::to_string(k);
    hvd_status_t s =
        hvd_allreduce_async(&t, bufs[k].data(), HVD_OP_SUM, name.c_str(), nullptr, &handles[k]);
    if (s != HVD_SUCCESS) {
      *detail = "submit " + name + ": " + status_text(s);
      return false;
    }
  }
  hvd_status_t s = hvd_wait_all(handles.data(), n);
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  if (s != HVD_SUCCESS) {
    *detail = "wait_all: " + status_text(s);
    return false;
  }
  for (size_t k = 0; k < n; ++k) {
    if (!check_allreduce(bufs[k].data(), sizes[k], c, hvd_size(), detail)) {
      *detail = prefix + std::to_string(k) + ": " + *detail;
      return false;
    }
  }
  return true;
}

}  // namespace

void test_submission_orders(Results& results) {
  std::vector<size_t> sizes;
  for (size_t k = 0; k < 24; ++k) sizes.push_back(k % 3 == 0 ? 70001 + k : 1 + 37 * k);
  std::vector<size_t> order(sizes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  // Each rank its own order: rotated by rank, reversed on odd ranks.
  std::rotate(order.begin(), order.begin() + (hvd_rank() * 5) % order.size(), order.end());
  if (hvd_rank() % 2 == 1) std::reverse(order.begin(), order.end());
  std::string detail;
  bool ok = run_named_batch("order.", sizes, order, &detail);
  record(results, "orders.different_per_rank", ok, detail);
}

void test_many_in_flight(Results& results) {
  std::vector<size_t> sizes(1000, 16), order(1000);
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::string detail;
  bool ok = run_named_batch("inflight.", sizes, order, &detail);
  record(results, "in_flight.1000_ops", ok, detail);
}

void test_threads(Results& results) {
  constexpr int kThreads = 4, kOpsPerThread = 50;
  std::atomic<int> failures{0};
  std::vector<std::string> details(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<size_t> sizes(kOpsPerThread), order(kOpsPerThread);
      for (int k = 0; k < kOpsPerThread; ++k) {
        sizes[k] = 1 + static_cast<size_t>((t * 131 + k * 977) % 5000);
        order[k] = static_cast<size_t>(k);
      }
      if (!run_named_batch("thread" + std::to_string(t) + ".", sizes, order, &details[t])) {
        failures.fetch_add(1);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::string detail;
  for (const std::string& d : details) detail += d.empty() ? "" : d + "; ";
  record(results, "threads.4_submitters", failures.load() == 0, detail);
}

namespace {
void count_done(void* user, hvd_handle_t, hvd_status_t status) {
  if (status == HVD_SUCCESS) static_cast<std::atomic<int>*>(user)->fetch_add(1);
}
}  // namespace

void test_callbacks_and_auto_names(Results& results) {
  std::atomic<int> done{0};
  std::vector<hvd_handle_t> handles;
  std::vector<std::vector<int32_t>> bufs(10, std::vector<int32_t>(8, hvd_rank() + 1));
  std::vector<int64_t> shape = {8};
  bool ok = true;
  for (auto& buf : bufs) {
    hvd_tensor_t t = make_tensor(buf.data(), HVD_INT32, shape);
    hvd_op_args_t args;
    hvd_op_args_init(&args, sizeof(args));
    args.on_done = count_done;
    args.on_done_user_data = &done;
    hvd_handle_t h = 0;
    ok = ok && hvd_allreduce_async(&t, buf.data(), HVD_OP_SUM, nullptr, &args, &h) == HVD_SUCCESS;
    handles.push_back(h);
  }
  ok = ok && hvd_wait_all(handles.data(), handles.size()) == HVD_SUCCESS;
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  const int n = hvd_size();
  for (auto& buf : bufs) ok = ok && buf[7] == n * (n + 1) / 2;
  record(results, "callbacks_and_auto_names", ok && done.load() == 10,
         "callbacks seen: " + std::to_string(done.load()));
}

}  // namespace hvdc_test
