// The error matrix: each mismatch fails the tensor on every rank with a message naming the
// tensor, the property and the ranks; the job goes on and the next op works.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {

namespace {

enum class Kind { kAllreduce, kAllgather, kBroadcast };

struct Submission {
  Kind kind = Kind::kAllreduce;
  int32_t root = 0;  // broadcast
  int64_t cols = 1;  // allgather: the trailing dimension
  int32_t dtype = HVD_FLOAT32;
  int64_t length = 4;
  int32_t op = HVD_OP_SUM;
  int32_t device = HVD_DEVICE_CPU;
  double prescale = 1.0;
};

struct Outcome {
  hvd_status_t code;
  std::string message;
};

hvd_status_t submit(const std::string& name, const Submission& sub, std::vector<double>& buf,
                    std::vector<int64_t>& shape, hvd_handle_t* h) {
  buf.assign(static_cast<size_t>(sub.length * sub.cols), 1.0);  // room for any dtype
  shape = {sub.length};
  if (sub.kind == Kind::kAllgather) shape.push_back(sub.cols);
  hvd_tensor_t t = make_tensor(buf.data(), sub.dtype, shape);
  t.device.type = sub.device;
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  args.prescale_factor = sub.prescale;
  switch (sub.kind) {
    case Kind::kAllgather:
      return hvd_allgather_async(&t, name.c_str(), &args, h);
    case Kind::kBroadcast:
      return hvd_broadcast_async(&t, buf.data(), sub.root, name.c_str(), &args, h);
    default:
      return hvd_allreduce_async(&t, buf.data(), sub.op, name.c_str(), &args, h);
  }
}

Outcome submit_and_wait(const std::string& name, const Submission& sub) {
  std::vector<double> buf;
  std::vector<int64_t> shape;
  hvd_handle_t h = 0;
  hvd_status_t s = submit(name, sub, buf, shape, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  Outcome out{s, s == HVD_SUCCESS ? "" : hvd_last_error_message()};
  if (h != 0) hvd_handle_free(h);
  return out;
}

bool contains_all(const std::string& text, const std::vector<std::string>& parts,
                  std::string* missing) {
  for (const std::string& p : parts) {
    if (text.find(p) == std::string::npos) {
      *missing = "message lacks '" + p + "': " + text;
      return false;
    }
  }
  return true;
}

// Rank 0 submits `odd`, every other rank `usual`; all must get `code` with `parts` in the
// message, and a correct op must work afterwards.
void expect_error(Results& results, const std::string& name, const Submission& odd,
                  const Submission& usual, hvd_status_t code, std::vector<std::string> parts) {
  Outcome o = submit_and_wait(name, hvd_rank() == 0 ? odd : usual);
  std::string detail;
  bool ok = o.code == code;
  if (!ok) detail = "got " + std::string(hvd_status_string(o.code)) + ": " + o.message;
  parts.push_back("'" + name + "'");
  ok = ok && contains_all(o.message, parts, &detail);
  Outcome after = submit_and_wait(name + ".after", Submission());
  if (after.code != HVD_SUCCESS) {
    ok = false;
    detail += " then a correct op failed: " + after.message;
  }
  record(results, name, ok, detail);
}

void block_until(void* user, hvd_handle_t, hvd_status_t) {
  auto* release = static_cast<std::atomic<bool>*>(user);
  while (!release->load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// A completion callback holds the engine thread, so "dup" stays in flight deterministically:
// the blocker is submitted first on every rank, so it is ready (and runs) before "dup".
void test_duplicate_name(Results& results) {
  std::atomic<bool> release{false};
  float blocker_data = 1.0f, dup_data = 1.0f;
  std::vector<int64_t> shape = {1};
  hvd_tensor_t blocker = make_tensor(&blocker_data, HVD_FLOAT32, shape);
  hvd_tensor_t dup = make_tensor(&dup_data, HVD_FLOAT32, shape);
  hvd_op_args_t args;
  hvd_op_args_init(&args, sizeof(args));
  args.on_done = block_until;
  args.on_done_user_data = &release;
  hvd_handle_t hb = 0, h1 = 0, h2 = 0;
  bool ok = hvd_allreduce_async(&blocker, &blocker_data, HVD_OP_SUM, "dup.blocker", &args, &hb) ==
            HVD_SUCCESS;
  ok = ok && hvd_allreduce_async(&dup, &dup_data, HVD_OP_SUM, "dup", nullptr, &h1) == HVD_SUCCESS;
  const hvd_status_t second = hvd_allreduce_async(&dup, &dup_data, HVD_OP_SUM, "dup", nullptr, &h2);
  std::string message = hvd_last_error_message();
  release.store(true);
  ok = ok && hvd_wait(hb) == HVD_SUCCESS && hvd_wait(h1) == HVD_SUCCESS;
  hvd_handle_free(hb);
  hvd_handle_free(h1);
  std::string detail =
      "second submit gave " + std::string(hvd_status_string(second)) + ": " + message;
  ok = ok && second == HVD_ERR_DUPLICATE_NAME && message.find("'dup'") != std::string::npos;
  record(results, "error.duplicate_name", ok, detail);
}

}  // namespace

void test_error_matrix(Results& results) {
  const Submission usual;
  if (hvd_size() > 1) {
    Submission s = usual;
    s.dtype = HVD_INT32;
    expect_error(results, "error.mismatch.dtype", s, usual, HVD_ERR_MISMATCH,
                 {"data type", "rank 0: int32", "float32"});
    s = usual;
    s.length = 5;
    expect_error(results, "error.mismatch.shape", s, usual, HVD_ERR_MISMATCH,
                 {"shape", "rank 0: [5]", "[4]"});
    s = usual;
    s.op = HVD_OP_MAX;
    expect_error(results, "error.mismatch.reduce_op", s, usual, HVD_ERR_MISMATCH,
                 {"reduction operation", "rank 0: max", "sum"});
    s = usual;
    s.prescale = 2.0;
    expect_error(results, "error.mismatch.scale_factors", s, usual, HVD_ERR_MISMATCH,
                 {"prescale", "rank 0: 2/1"});
    s = usual;
    s.device = HVD_DEVICE_CUDA;
    expect_error(results, "error.mismatch.cpu_vs_cuda", s, usual, HVD_ERR_MISMATCH,
                 {"CPU/GPU", "rank 0: GPU", "CPU"});
    s = usual;
    s.kind = Kind::kAllgather;
    expect_error(results, "error.mismatch.op_type", s, usual, HVD_ERR_MISMATCH,
                 {"operation", "rank 0: ALLGATHER", "ALLREDUCE"});
    Submission gather = usual;
    gather.kind = Kind::kAllgather;
    gather.cols = 3;
    s = gather;
    s.cols = 2;
    expect_error(results, "error.mismatch.allgather_trailing_dims", s, gather, HVD_ERR_MISMATCH,
                 {"shape", "trailing [2]", "trailing [3]"});
    Submission bcast = usual;
    bcast.kind = Kind::kBroadcast;
    s = bcast;
    s.root = 1;
    expect_error(results, "error.mismatch.broadcast_root", s, bcast, HVD_ERR_MISMATCH,
                 {"root rank", "rank 0: 1", ": 0"});
  }
  Submission cuda = usual;
  cuda.device = HVD_DEVICE_CUDA;
  expect_error(results, "error.cuda_without_gpu_path", cuda, cuda, HVD_ERR_UNSUPPORTED, {"CUDA"});
  test_duplicate_name(results);
  Submission bad = usual;
  bad.dtype = HVD_BOOL;
  bad.op = HVD_OP_AVERAGE;
  Outcome o = submit_and_wait("error.bool_average", bad);
  record(results, "error.bool_average_rejected_locally",
         o.code == HVD_ERR_INVALID_ARGUMENT && o.message.find("bool") != std::string::npos,
         o.message);
}

}  // namespace hvdc_test
