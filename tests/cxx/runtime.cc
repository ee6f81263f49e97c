// hvdc.hpp around the collectives: topology, process sets, errors as hvdc::Error, DLPack views,
// statistics, the log callback, the timeline, hang reports and abort.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cases.h"
#include "check.h"

namespace cxx_test {

namespace {

std::atomic<int> g_log_lines{0};
void count_log_lines(void* user_data, int32_t, const char*) {
  if (user_data == &g_log_lines) ++g_log_lines;
}

long file_size(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return -1;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  std::fclose(f);
  return size;
}

// Members of `set` exercise it: allreduce, broadcast from the set's rank 0, allgather and
// alltoall, whose root and orders refer to ranks of the set.
void run_on_set(hvdc::ProcessSet set, const std::string& tag) {
  const int r = hvdc::rank(), members = set.size();
  const std::vector<int32_t> ranks = set.ranks();
  int32_t sum_of_members = 0;
  for (int32_t m : ranks) sum_of_members += m;
  hvdc::Options opts{tag + ".sum", set};
  std::vector<int32_t> v(3, r);
  hvdc::allreduce(v, hvdc::ReduceOp::Sum, opts);
  EXPECT_EQ(v[2], sum_of_members);
  opts.name = tag + ".bcast";
  std::vector<int32_t> b = {r};
  hvdc::broadcast(b, 0, opts);
  EXPECT_EQ(b[0], ranks[0]);
  opts.name = tag + ".gather";
  EXPECT(hvdc::allgather(std::vector<int32_t>{r}, opts) == ranks);
  opts.name = tag + ".a2a";
  const auto result = hvdc::alltoall(std::vector<int32_t>(ranks.size(), r), {}, opts);
  EXPECT(result.data == ranks);
  EXPECT_EQ(result.received_splits.size(), static_cast<size_t>(members));
}

}  // namespace

void test_topology() {
  const int n = hvdc::size(), r = hvdc::rank();
  EXPECT(hvdc::is_initialized());
  EXPECT(n >= 1 && r >= 0 && r < n);
  EXPECT(hvdc::local_rank() >= 0 && hvdc::local_rank() < hvdc::local_size());
  EXPECT(hvdc::cross_rank() >= 0 && hvdc::cross_rank() < hvdc::cross_size());
  EXPECT_EQ(hvdc::local_size() * hvdc::cross_size(), n);  // one host
  EXPECT(std::string(hvdc::version_string()).rfind("0.1.0", 0) == 0);
  EXPECT_EQ(hvdc::abi_version(), HVDC_ABI_VERSION);
  EXPECT(hvdc::has_feature(hvdc::Feature::Ucx) == (hvd_has_feature(HVD_FEATURE_UCX) == 1));
  EXPECT(std::string(hvdc::status_string(HVD_ERR_TIMEOUT)).size() > 0);
  // The same count, or the same refusal, as the C call.
  int32_t c_count = -1;
  if (hvd_device_count(&c_count) == HVD_SUCCESS) {
    EXPECT_EQ(hvdc::device_count(), c_count);
  } else {
    EXPECT_EQ(c_count, 0);
    EXPECT_ERROR(HVD_ERR_UNSUPPORTED, "", hvdc::device_count());
  }
  const hvdc::OpFlags both = hvdc::OpFlags::StreamOrdered | hvdc::OpFlags::HostPath;
  EXPECT_EQ(static_cast<uint32_t>(both), 3u);
}

void test_process_sets() {
  const int n = hvdc::size(), r = hvdc::rank();
  const hvdc::ProcessSet global;
  EXPECT_EQ(global.size(), n);
  EXPECT_EQ(global.rank(), r);
  if (n < 2) {  // a set of every rank is set 0 itself
    EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "", hvdc::add_process_set({0}));
    return;
  }
  const hvdc::ProcessSet first = hvdc::add_process_set({0});
  std::vector<int32_t> others;
  for (int32_t i = n - 1; i >= 1; --i) others.push_back(i);  // any order
  const hvdc::ProcessSet rest = hvdc::add_process_set(others);
  EXPECT(hvdc::process_sets() == (std::vector<hvdc::ProcessSet>{global, first, rest}));
  EXPECT_EQ(first.size(), 1);
  EXPECT(first.included() == (r == 0));
  EXPECT_EQ(first.rank(), r == 0 ? 0 : -1);
  EXPECT_EQ(rest.rank(), r - 1);
  EXPECT(rest.ranks() == std::vector<int32_t>(others.rbegin(), others.rend()));
  if (r == 0) {
    run_on_set(first, "cxx.set.first");
    std::vector<float> v(2, 1.0f);
    EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "",
                 hvdc::allreduce(v, hvdc::ReduceOp::Sum, {"cxx.set.outsider", rest}));
  } else {
    run_on_set(rest, "cxx.set.rest");
  }
  hvdc::remove_process_set(rest);
  hvdc::remove_process_set(first);
  EXPECT(hvdc::process_sets() == std::vector<hvdc::ProcessSet>{global});
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "", rest.size());
}

void test_errors() {
  const int n = hvdc::size(), r = hvdc::rank();
  EXPECT_ERROR(HVD_ERR_INVALID_USAGE, "hvd_init", hvdc::init());
  std::vector<hvdc::Bool> flags(2, hvdc::Bool{1});
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "hvd_allreduce_async",
               hvdc::allreduce(flags, hvdc::ReduceOp::Average, {"cxx.bool.avg"}));
  {
    hvdc::Handle stale(0xdeadbeefULL);  // its destructor's failed free is dropped
    EXPECT_ERROR(HVD_ERR_INVALID_HANDLE, "hvd_wait", stale.wait());
    EXPECT_ERROR(HVD_ERR_INVALID_HANDLE, "hvd_test", stale.test());
  }
  if (n < 2) return;
  // Rank 0 submits float32, the others int32: the op fails on every rank, naming the tensor.
  std::vector<float> f(4, 1.0f);
  std::vector<int32_t> i(4, 1);
  EXPECT_ERROR(HVD_ERR_MISMATCH, "cxx.mismatch",
               r == 0 ? hvdc::allreduce(f, hvdc::ReduceOp::Sum, {"cxx.mismatch"})
                      : hvdc::allreduce(i, hvdc::ReduceOp::Sum, {"cxx.mismatch"}));
  std::vector<float> after(4, 1.0f);
  hvdc::allreduce(after, hvdc::ReduceOp::Sum, {"cxx.after_mismatch"});
  EXPECT_EQ(after[0], static_cast<float>(n));
}

void test_dlpack() {
  float data[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  hvd_dl_tensor_t dl = {data, {HVD_DEVICE_CPU, 0}, 2, {2, 32, 1}, shape, nullptr, 0};
  const hvdc::Tensor t = hvdc::Tensor::from_dlpack(dl);
  EXPECT(t.dtype() == hvdc::DType::Float32 && t.data() == data && t.bytes() == sizeof data);
  EXPECT(t.shape() == (std::vector<int64_t>{2, 3}));
  hvdc::allreduce_async(t, data, hvdc::ReduceOp::Max, {"cxx.dlpack"}).wait();
  EXPECT_EQ(data[5], 6.0f);
  dl.dtype.lanes = 2;
  EXPECT_ERROR(HVD_ERR_INVALID_ARGUMENT, "lanes", hvdc::Tensor::from_dlpack(dl));
}

void test_diagnostics(const std::string& timeline_path) {
  const hvd_stats_t stats = hvdc::stats();
  EXPECT(stats.collectives > 0 && stats.tensors >= stats.collectives);
  EXPECT(hvdc::stats_text().find("collectives ") != std::string::npos);
  EXPECT(!hvdc::async_error().has_value());

  hvdc::set_log_callback(count_log_lines, &g_log_lines);
  const std::string report = hvdc::dump_pending();  // nothing in flight: a short report
  hvdc::set_log_callback(nullptr, nullptr);
  EXPECT(g_log_lines.load() >= 1);

  hvdc::timeline_start(timeline_path);
  std::vector<float> v(16, 1.0f);
  hvdc::allreduce(v, hvdc::ReduceOp::Sum, {"cxx.timeline"});
  hvdc::timeline_stop();
  if (hvdc::rank() == 0) EXPECT(file_size(timeline_path) > 0);
}

// Last: after an abort every op fails on every rank until shutdown.
void test_abort() {
  // A rank reaching this barrier has finished its earlier ops. Rank 0 aborts as soon as its own
  // barrier completes, so elsewhere the barrier itself may already fail with the abort.
  try {
    hvdc::barrier({"cxx.before_abort"});
  } catch (const hvdc::Error& e) {
    if (hvdc::rank() == 0 || e.code() != HVD_ERR_ABORTED) throw;
  }
  if (hvdc::rank() == 0) hvdc::abort("the C++ test aborts on purpose");
  EXPECT_ERROR(HVD_ERR_ABORTED, "", hvdc::barrier({"cxx.after_abort"}));
}

}  // namespace cxx_test
