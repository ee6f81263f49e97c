// The bad-input matrix of the C API in one process (a singleton engine, no MPI): every exported
// function that takes pointers, codes, counts, shapes, names, ids or handles, against each class
// of bad value that applies. Each call must return the documented code with a message naming the
// argument and the bad value, write no output, enqueue nothing (the name stays free), and leave
// the engine working (every fixture test ends with a valid allreduce).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bad_input.h"

namespace {

using namespace hvdc_test;

// ---- The collectives: one table, every op behind the same signature ----------------------

float g_in[16], g_out[16];  // room for every valid tensor below
const int64_t kShape4[1] = {4};

using Submit = std::function<hvd_status_t(const hvd_tensor_t*, const char*, const hvd_op_args_t*,
                                          hvd_handle_t*)>;
struct Op {
  const char* label;
  const char* input_arg;  // how its messages name the tensor ("" for barrier)
  Submit submit;
};

std::vector<Op> ops() {
  return {
      {"allreduce", "input",
       [](auto* t, auto* n, auto* a, auto* h) {
         return hvd_allreduce_async(t, g_out, HVD_OP_SUM, n, a, h);
       }},
      {"allgather", "input",
       [](auto* t, auto* n, auto* a, auto* h) { return hvd_allgather_async(t, n, a, h); }},
      {"broadcast", "input",
       [](auto* t, auto* n, auto* a, auto* h) {
         return hvd_broadcast_async(t, g_out, 0, n, a, h);
       }},
      {"alltoall", "input",
       [](auto* t, auto* n, auto* a, auto* h) { return hvd_alltoall_async(t, nullptr, n, a, h); }},
      {"reducescatter", "input",
       [](auto* t, auto* n, auto* a, auto* h) {
         return hvd_reducescatter_async(t, g_out, HVD_OP_SUM, n, a, h);
       }},
      {"grouped", "inputs[0]",
       [](auto* t, auto* n, auto* a, auto* h) {
         void* outs[1] = {g_out};
         const char* names[1] = {n};
         return hvd_grouped_allreduce_async(t, outs, 1, HVD_OP_SUM, n ? names : nullptr, a, h);
       }},
      {"barrier", "", [](auto*, auto* n, auto* a, auto* h) { return hvd_barrier_async(n, a, h); }},
  };
}

// The name must not have been enqueued by the failed call: a valid op under it completes.
void expect_name_free(const Op& op, const char* name) {
  hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
  hvd_handle_t h = 0;
  ASSERT_EQ(op.submit(&t, name, nullptr, &h), HVD_SUCCESS)
      << op.label << " " << name << ": " << hvd_last_error_message();
  EXPECT_EQ(hvd_wait(h), HVD_SUCCESS) << op.label << ": " << hvd_last_error_message();
  EXPECT_EQ(hvd_handle_free(h), HVD_SUCCESS);
}

struct BadTensor {
  const char* label;
  hvd_tensor_t t;
  const char* field;  // appended to the op's input argument
  const char* value;
};

std::vector<BadTensor> bad_tensors() {
  static const int64_t negative[2] = {4, -3};
  static const int64_t most_negative[1] = {std::numeric_limits<int64_t>::min()};
  static const int64_t elements_overflow[2] = {int64_t{1} << 40, int64_t{1} << 40};
  static const int64_t bytes_overflow[1] = {int64_t{1} << 62};  // x 4 bytes > SIZE_MAX
  static const int64_t empty_but_huge[3] = {0, kI64Max, 2};
  auto t = [](int32_t dtype, int32_t ndim, const int64_t* shape) {
    return tensor(g_in, dtype, ndim, shape);
  };
  std::vector<BadTensor> out = {
      {"dtype -1", t(-1, 1, kShape4), "->dtype", "-1"},
      {"dtype 11", t(HVD_BFLOAT16 + 1, 1, kShape4), "->dtype", "11"},
      {"dtype max", t(INT32_MAX, 1, kShape4), "->dtype", "2147483647"},
      {"ndim -1", t(HVD_FLOAT32, -1, kShape4), "->ndim", "-1"},
      {"ndim 33", t(HVD_FLOAT32, HVD_MAX_NDIM + 1, kShape4), "->ndim", "33"},
      {"shape NULL", t(HVD_FLOAT32, 2, nullptr), "->shape", "NULL"},
      {"negative dim", t(HVD_FLOAT32, 2, negative), "->shape[1]", "-3"},
      {"INT64_MIN dim", t(HVD_FLOAT32, 1, most_negative), "->shape[0]", "-9223372036854775808"},
      {"elements overflow int64", t(HVD_UINT8, 2, elements_overflow), "->shape[1]",
       "1099511627776"},
      {"bytes overflow size_t", t(HVD_FLOAT32, 1, bytes_overflow), "->shape[0]",
       "4611686018427387904"},
      {"zero dim, others overflow", t(HVD_UINT8, 3, empty_but_huge), "->shape[2]", "= 2"},
      {"data NULL", tensor(nullptr, HVD_FLOAT32, 1, kShape4), "->data", "NULL"},
  };
  static const char* const kDevices[] = {"0", "3", "-1", "99"};
  for (const char* device : kDevices) {
    hvd_tensor_t bad = t(HVD_FLOAT32, 1, kShape4);
    bad.device.type = std::atoi(device);
    out.push_back({"device type", bad, "->device.type", device});
  }
  return out;
}

TEST_F(BadInput, TensorsOfEveryOp) {
  for (const Op& op : ops()) {
    if (*op.input_arg == '\0') continue;
    hvd_handle_t h = 0;
    EXPECT_FAILS(op.submit(nullptr, "bad.t", nullptr, &h), HVD_ERR_INVALID_ARGUMENT, "input",
                 "NULL")
        << op.label;
    for (const BadTensor& b : bad_tensors()) {
      EXPECT_FAILS(op.submit(&b.t, "bad.t", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
                   std::string(op.input_arg) + b.field, b.value)
          << op.label << ": " << b.label;
    }
    EXPECT_EQ(h, 0u) << op.label << ": a failed call wrote *handle";
    expect_name_free(op, "bad.t");
  }
}

struct BadName {
  std::string name;
  Parts parts;
};

std::vector<BadName> bad_names() {
  return {
      {"", {"name", "empty"}},
      {std::string(4097, 'n'), {"name", "4097 bytes", "4096"}},
      {"\xC3\x28", {"name", "UTF-8", "0xC3", "offset 0"}},          // bad continuation
      {"ok\xC0\xAF", {"name", "UTF-8", "0xC0", "offset 2"}},        // overlong '/', 2 bytes
      {"\xE0\x80\xAF", {"name", "UTF-8", "0xE0", "offset 0"}},      // overlong, 3 bytes
      {"\xF0\x80\x80\xAF", {"name", "UTF-8", "0xF0", "offset 0"}},  // overlong, 4 bytes
      {"a\xED\xA0\x80", {"name", "UTF-8", "0xED", "offset 1"}},     // lone high surrogate
      {"\xED\xBF\xBF", {"name", "UTF-8", "0xED"}},                  // lone low surrogate
      {"\xF4\x90\x80\x80", {"name", "UTF-8", "0xF4"}},              // above U+10FFFF
      {"abc\xE2\x82", {"name", "UTF-8", "0xE2", "offset 3"}},       // truncated
      {"\x80", {"name", "UTF-8", "0x80"}},                          // lone continuation
      {"x\xFF", {"name", "UTF-8", "0xFF", "offset 1"}},
  };
}

TEST_F(BadInput, NamesOfEveryOp) {
  for (const Op& op : ops()) {
    hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
    hvd_handle_t h = 0;
    for (const BadName& b : bad_names()) {
      EXPECT_TRUE(
          Fails(op.submit(&t, b.name.c_str(), nullptr, &h), HVD_ERR_INVALID_ARGUMENT, b.parts))
          << op.label << ": name of " << b.name.size() << " bytes";
    }
    EXPECT_EQ(h, 0u);
  }
  // The edges that are valid: exactly the limit, and multi-byte UTF-8 of every length.
  expect_allreduce_works(std::string(4096, 'n').c_str());
  expect_allreduce_works("grad/\xC3\xA9/\xE2\x82\xAC/\xF0\x9D\x84\x9E/\xF4\x8F\xBF\xBF");
}

TEST_F(BadInput, ArgsOfEveryOp) {
  hvd_op_args_t args;
  for (const Op& op : ops()) {
    hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
    hvd_handle_t h = 0;
    EXPECT_FAILS(op.submit(&t, "bad.a", nullptr, nullptr), HVD_ERR_INVALID_ARGUMENT, "handle",
                 "NULL")
        << op.label;
    for (uint32_t size : {0u, 3u, 7u}) {
      ASSERT_EQ(hvd_op_args_init(&args, sizeof(args)), HVD_SUCCESS);
      args.struct_size = size;
      EXPECT_FAILS(op.submit(&t, "bad.a", &args, &h), HVD_ERR_INVALID_ARGUMENT, "args->struct_size",
                   std::to_string(size))
          << op.label;
    }
    ASSERT_EQ(hvd_op_args_init(&args, sizeof(args)), HVD_SUCCESS);
    args.prescale_factor = std::nan("");
    EXPECT_FAILS(op.submit(&t, "bad.a", &args, &h), HVD_ERR_INVALID_ARGUMENT,
                 "args->prescale_factor", "nan")
        << op.label;
    args.prescale_factor = 1.0;
    args.postscale_factor = -HUGE_VAL;
    EXPECT_FAILS(op.submit(&t, "bad.a", &args, &h), HVD_ERR_INVALID_ARGUMENT,
                 "args->postscale_factor", "-inf")
        << op.label;
    args.postscale_factor = 1.0;
    for (uint32_t flags : {4u, 0x80000000u, 0xFFFFFFFFu}) {
      args.flags = flags;
      EXPECT_FAILS(op.submit(&t, "bad.a", &args, &h), HVD_ERR_INVALID_ARGUMENT, "args->flags",
                   "unknown bits")
          << op.label << " flags " << flags;
    }
    args.flags = 0;
    for (int32_t set : {1, 7, -1, INT32_MAX, INT32_MIN}) {
      args.process_set = set;
      EXPECT_FAILS(op.submit(&t, "bad.a", &args, &h), HVD_ERR_INVALID_ARGUMENT, "args->process_set",
                   "process set " + std::to_string(set))
          << op.label;
    }
    EXPECT_EQ(h, 0u);
    expect_name_free(op, "bad.a");
  }
}

TEST_F(BadInput, ReduceOpsAndOutputs) {
  hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
  hvd_tensor_t flags = tensor(g_in, HVD_BOOL, 1, kShape4);
  hvd_handle_t h = 0;
  for (int32_t op : {2, -1, 6, 99, INT32_MIN}) {
    const std::string v = "reduce_op " + std::to_string(op);
    EXPECT_FAILS(hvd_allreduce_async(&t, g_out, op, "bad.r", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
                 v);
    EXPECT_FAILS(hvd_reducescatter_async(&t, g_out, op, "bad.r", nullptr, &h),
                 HVD_ERR_INVALID_ARGUMENT, v);
    void* outs[1] = {g_out};
    EXPECT_FAILS(hvd_grouped_allreduce_async(&t, outs, 1, op, nullptr, nullptr, &h),
                 HVD_ERR_INVALID_ARGUMENT, v);
  }
  for (int32_t op : {HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {  // allreduce-only ops
    EXPECT_FAILS(hvd_reducescatter_async(&t, g_out, op, "bad.r", nullptr, &h),
                 HVD_ERR_INVALID_ARGUMENT, "reduce_op " + std::to_string(op), "reducescatter");
  }
  EXPECT_FAILS(hvd_allreduce_async(&flags, g_out, HVD_OP_AVERAGE, "bad.r", nullptr, &h),
               HVD_ERR_INVALID_ARGUMENT, "reduce_op", "bool");
  EXPECT_FAILS(hvd_reducescatter_async(&flags, g_out, HVD_OP_AVERAGE, "bad.r", nullptr, &h),
               HVD_ERR_INVALID_ARGUMENT, "reduce_op", "bool");
  EXPECT_FAILS(hvd_allreduce_async(&t, nullptr, HVD_OP_SUM, "bad.r", nullptr, &h),
               HVD_ERR_INVALID_ARGUMENT, "output", "NULL");
  EXPECT_FAILS(hvd_broadcast_async(&t, nullptr, 0, "bad.r", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
               "output", "NULL");
  EXPECT_FAILS(hvd_reducescatter_async(&t, nullptr, HVD_OP_SUM, "bad.r", nullptr, &h),
               HVD_ERR_INVALID_ARGUMENT, "output", "NULL");
  EXPECT_EQ(h, 0u);
  // An empty tensor needs no buffers.
  const int64_t zero[1] = {0};
  hvd_tensor_t empty = tensor(nullptr, HVD_FLOAT32, 1, zero);
  ASSERT_EQ(hvd_allreduce_async(&empty, nullptr, HVD_OP_SUM, "empty", nullptr, &h), HVD_SUCCESS)
      << hvd_last_error_message();
  EXPECT_EQ(hvd_wait(h), HVD_SUCCESS);
  EXPECT_EQ(hvd_handle_free(h), HVD_SUCCESS);
}

TEST_F(BadInput, RootsSplitsAndScalars) {
  hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
  hvd_tensor_t scalar = tensor(g_in, HVD_FLOAT32, 0, nullptr);
  hvd_handle_t h = 0;
  for (int32_t root : {-1, 1, INT32_MAX, INT32_MIN}) {
    EXPECT_FAILS(hvd_broadcast_async(&t, g_out, root, "bad.b", nullptr, &h),
                 HVD_ERR_INVALID_ARGUMENT, "root_rank " + std::to_string(root), "[0, 1)");
  }
  EXPECT_FAILS(hvd_allgather_async(&scalar, "bad.b", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
               "input->ndim is 0");
  EXPECT_FAILS(hvd_alltoall_async(&scalar, nullptr, "bad.b", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
               "input->ndim is 0");
  EXPECT_FAILS(hvd_reducescatter_async(&scalar, g_out, HVD_OP_SUM, "bad.b", nullptr, &h),
               HVD_ERR_INVALID_ARGUMENT, "input->ndim is 0");
  const int32_t negative[1] = {-1}, short_sum[1] = {3}, long_sum[1] = {INT32_MAX};
  EXPECT_FAILS(hvd_alltoall_async(&t, negative, "bad.b", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
               "splits[0]", "-1");
  EXPECT_FAILS(hvd_alltoall_async(&t, short_sum, "bad.b", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
               "splits add up to 3", "input->shape[0] is 4");
  EXPECT_FAILS(hvd_alltoall_async(&t, long_sum, "bad.b", nullptr, &h), HVD_ERR_INVALID_ARGUMENT,
               "splits add up to 2147483647");
  EXPECT_EQ(h, 0u);
}

TEST_F(BadInput, GroupedAllreduce) {
  const int64_t shape[1] = {2};
  hvd_tensor_t in[2] = {tensor(g_in, HVD_FLOAT32, 1, shape),
                        tensor(g_in + 2, HVD_FLOAT32, 1, shape)};
  void* outs[2] = {g_out, g_out + 2};
  const char* names[2] = {"bad.g0", "bad.g1"};
  hvd_handle_t h = 0;
  auto group = [&](const hvd_tensor_t* i, void* const* o, size_t n, const char* const* nm) {
    return hvd_grouped_allreduce_async(i, o, n, HVD_OP_SUM, nm, nullptr, &h);
  };
  EXPECT_FAILS(group(nullptr, outs, 2, names), HVD_ERR_INVALID_ARGUMENT, "inputs is NULL");
  EXPECT_FAILS(group(in, nullptr, 2, names), HVD_ERR_INVALID_ARGUMENT, "outputs is NULL");
  EXPECT_FAILS(group(in, outs, 0, names), HVD_ERR_INVALID_ARGUMENT, "count is 0");
  EXPECT_FAILS(group(in, outs, SIZE_MAX, names), HVD_ERR_INVALID_ARGUMENT, "count",
               std::to_string(SIZE_MAX));
  EXPECT_FAILS(hvd_grouped_allreduce_async(in, outs, 2, HVD_OP_SUM, names, nullptr, nullptr),
               HVD_ERR_INVALID_ARGUMENT, "handle is NULL");
  // A bad second member fails the whole group: the first is not enqueued either.
  const char* null_name[2] = {"bad.g0", nullptr};
  EXPECT_FAILS(group(in, outs, 2, null_name), HVD_ERR_INVALID_ARGUMENT, "names[1]", "NULL");
  const char* bad_name[2] = {"bad.g0", "\xED\xA0\x80"};
  EXPECT_FAILS(group(in, outs, 2, bad_name), HVD_ERR_INVALID_ARGUMENT, "names[1]", "UTF-8");
  void* null_out[2] = {g_out, nullptr};
  EXPECT_FAILS(group(in, null_out, 2, names), HVD_ERR_INVALID_ARGUMENT, "outputs[1]", "NULL");
  hvd_tensor_t bad[2] = {in[0], in[1]};
  bad[1].dtype = 42;
  EXPECT_FAILS(group(bad, outs, 2, names), HVD_ERR_INVALID_ARGUMENT, "inputs[1]->dtype", "42");
  bad[1] = in[1];
  bad[1].device.type = HVD_DEVICE_CUDA;
  EXPECT_FAILS(group(bad, outs, 2, names), HVD_ERR_INVALID_ARGUMENT, "inputs[1]", "device type 2");
  bad[1].device.type = 7;
  EXPECT_FAILS(group(bad, outs, 2, names), HVD_ERR_INVALID_ARGUMENT, "inputs[1]->device.type", "7");
  EXPECT_EQ(h, 0u);
  ASSERT_EQ(group(in, outs, 2, names), HVD_SUCCESS) << hvd_last_error_message();
  EXPECT_EQ(hvd_wait(h), HVD_SUCCESS);
  EXPECT_EQ(hvd_handle_free(h), HVD_SUCCESS);
}

// ---- Handles -------------------------------------------------------------------------------

// A finished op's handle, not freed.
hvd_handle_t finished_allreduce() {
  hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
  hvd_handle_t h = 0;
  EXPECT_EQ(hvd_allreduce_async(&t, g_out, HVD_OP_SUM, nullptr, nullptr, &h), HVD_SUCCESS);
  EXPECT_EQ(hvd_wait(h), HVD_SUCCESS);
  return h;
}

std::string hex(hvd_handle_t h) {
  char text[32];
  std::snprintf(text, sizeof(text), "handle 0x%llx", static_cast<unsigned long long>(h));
  return text;
}

// Every function taking a handle rejects `h` as unknown, naming it.
void expect_invalid_handle(hvd_handle_t h) {
  int32_t done = -1, splits[1] = {-1};
  hvd_tensor_t out = {};
  const std::string name = hex(h);
  EXPECT_FAILS(hvd_wait(h), HVD_ERR_INVALID_HANDLE, name);
  EXPECT_FAILS(hvd_test(h, &done), HVD_ERR_INVALID_HANDLE, name);
  EXPECT_FAILS(hvd_handle_output(h, &out), HVD_ERR_INVALID_HANDLE, name);
  EXPECT_FAILS(hvd_handle_received_splits(h, splits, 1), HVD_ERR_INVALID_HANDLE, name);
  EXPECT_FAILS(hvd_wait_all(&h, 1), HVD_ERR_INVALID_HANDLE, "handles[0]", name);
  EXPECT_FAILS(hvd_handle_free(h), HVD_ERR_INVALID_HANDLE, name);
  EXPECT_EQ(done, -1);
  EXPECT_EQ(splits[0], -1);
  EXPECT_EQ(out.data, nullptr);
}

TEST_F(BadInput, UnknownStaleAndDoubleFreedHandles) {
  for (hvd_handle_t h : {hvd_handle_t{0}, hvd_handle_t{1}, hvd_handle_t{0xdeadbeef}, UINT64_MAX}) {
    expect_invalid_handle(h);
  }
  const hvd_handle_t freed = finished_allreduce();
  ASSERT_EQ(hvd_handle_free(freed), HVD_SUCCESS);
  expect_invalid_handle(freed);  // stale, and freeing it again is a double free
  // A new op may reuse the slot; the old handle stays stale and does not reach the new op.
  const hvd_handle_t next = finished_allreduce();
  expect_invalid_handle(freed);
  EXPECT_EQ(hvd_wait(next), HVD_SUCCESS);
  EXPECT_EQ(hvd_handle_free(next), HVD_SUCCESS);
}

TEST_F(BadInput, HandlePointersAndCounts) {
  const hvd_handle_t h = finished_allreduce();
  EXPECT_FAILS(hvd_test(h, nullptr), HVD_ERR_INVALID_ARGUMENT, "done is NULL");
  EXPECT_FAILS(hvd_handle_output(h, nullptr), HVD_ERR_INVALID_ARGUMENT, "output is NULL");
  EXPECT_FAILS(hvd_handle_received_splits(h, nullptr, 1), HVD_ERR_INVALID_ARGUMENT,
               "splits is NULL");
  hvd_tensor_t out = {};
  int32_t splits[2] = {-1, -1};
  EXPECT_FAILS(hvd_handle_output(h, &out), HVD_ERR_INVALID_USAGE, "allgather");
  EXPECT_FAILS(hvd_handle_received_splits(h, splits, 1), HVD_ERR_INVALID_USAGE, "alltoall");
  EXPECT_FAILS(hvd_wait_all(nullptr, 2), HVD_ERR_INVALID_ARGUMENT, "handles is NULL");
  EXPECT_EQ(hvd_wait_all(nullptr, 0), HVD_SUCCESS);
  const hvd_handle_t pair[2] = {h, 0xdeadbeef};
  EXPECT_FAILS(hvd_wait_all(pair, 2), HVD_ERR_INVALID_HANDLE, "handles[1]", hex(0xdeadbeef));
  EXPECT_FAILS(hvd_wait_all(pair, SIZE_MAX), HVD_ERR_INVALID_ARGUMENT, "count",
               std::to_string(SIZE_MAX));
  EXPECT_EQ(hvd_handle_free(h), HVD_SUCCESS);
  // Received splits: count must be the set's size (1).
  hvd_tensor_t t = tensor(g_in, HVD_FLOAT32, 1, kShape4);
  hvd_handle_t a2a = 0;
  ASSERT_EQ(hvd_alltoall_async(&t, nullptr, "bad.h", nullptr, &a2a), HVD_SUCCESS);
  ASSERT_EQ(hvd_wait(a2a), HVD_SUCCESS);
  for (int32_t count : {0, 2, -1, INT32_MAX}) {
    EXPECT_FAILS(hvd_handle_received_splits(a2a, splits, count), HVD_ERR_INVALID_ARGUMENT,
                 "count is " + std::to_string(count));
  }
  EXPECT_EQ(splits[0], -1);
  EXPECT_EQ(hvd_handle_received_splits(a2a, splits, 1), HVD_SUCCESS);
  EXPECT_EQ(splits[0], 4);
  EXPECT_EQ(hvd_handle_free(a2a), HVD_SUCCESS);
}

// Handles belong to the process, not to one engine: an unfreed one stays usable across
// shutdown and the next init, a freed one stays stale.
TEST_F(BadInput, HandlesFromAPreviousInit) {
  const hvd_handle_t kept = finished_allreduce();
  const hvd_handle_t freed = finished_allreduce();
  ASSERT_EQ(hvd_handle_free(freed), HVD_SUCCESS);
  ASSERT_EQ(hvd_shutdown(), HVD_SUCCESS);
  int32_t done = 0;
  EXPECT_EQ(hvd_test(kept, &done), HVD_SUCCESS);
  EXPECT_EQ(done, 1);
  expect_invalid_handle(freed);
  ASSERT_EQ(init_singleton(), HVD_SUCCESS) << hvd_last_error_message();
  expect_invalid_handle(freed);
  EXPECT_EQ(hvd_wait(kept), HVD_SUCCESS);
  EXPECT_EQ(hvd_handle_free(kept), HVD_SUCCESS);
  expect_invalid_handle(kept);
}

}  // namespace
