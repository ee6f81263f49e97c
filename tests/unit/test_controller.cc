// The coordinator's negotiation: readiness, response order, and metadata mismatch errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/controller.h"
#include "hvdc.h"

namespace {

using hvdc::core::Controller;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc::core::Response;
using hvdc::core::ResponseKind;

Request req(const std::string& name, OpType type = OpType::kAllreduce, int32_t dtype = HVD_FLOAT32,
            std::vector<int64_t> shape = {4, 3}) {
  Request r;
  r.name = name;
  r.op_type = type;
  r.dtype = dtype;
  r.reduce_op = HVD_OP_SUM;
  r.root = 0;
  r.device_type = HVD_DEVICE_CPU;
  r.device_id = 0;
  r.prescale = 1.0;
  r.postscale = 1.0;
  r.shape = std::move(shape);
  return r;
}

std::vector<std::string> names_of(const std::vector<Response>& responses) {
  std::vector<std::string> out;
  for (const Response& r : responses) {
    EXPECT_EQ(r.names.size(), 1u);
    if (!r.names.empty()) out.push_back(r.names[0]);
  }
  return out;
}

// The text after "<who>: " up to the next "; " (or the end): the value a group of ranks had.
std::string value_of(const std::string& message, const std::string& who) {
  const std::string key = who + ": ";
  size_t at = message.find(key);
  if (at == std::string::npos) return "<" + who + " not found>";
  at += key.size();
  size_t end = message.find("; ", at);
  return message.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Submits one request per rank and returns the single response.
Response negotiate(const std::vector<Request>& by_rank) {
  Controller c(static_cast<int>(by_rank.size()));
  for (size_t r = 0; r < by_rank.size(); ++r) c.add(static_cast<int>(r), by_rank[r]);
  std::vector<Response> out = c.take_ready();
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? Response() : out[0];
}

void expect_mismatch(const Response& response, const std::string& name,
                     const std::string& property) {
  EXPECT_EQ(response.kind, ResponseKind::kError);
  EXPECT_EQ(response.error_code, HVD_ERR_MISMATCH);
  ASSERT_EQ(response.names.size(), 1u);
  EXPECT_EQ(response.names[0], name);
  EXPECT_NE(response.error_message.find(name), std::string::npos) << response.error_message;
  EXPECT_NE(response.error_message.find(property), std::string::npos)
      << "expected property '" << property << "' in: " << response.error_message;
}

TEST(Controller, ReadyOnlyWhenEveryRankReported) {
  Controller c(3);
  c.add(0, req("t"));
  EXPECT_TRUE(c.take_ready().empty());
  c.add(2, req("t"));
  EXPECT_TRUE(c.take_ready().empty());
  c.add(1, req("t"));
  std::vector<Response> out = c.take_ready();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, ResponseKind::kExecute);
  EXPECT_EQ(out[0].op_type, OpType::kAllreduce);
  EXPECT_EQ(out[0].names, std::vector<std::string>{"t"});
  EXPECT_EQ(out[0].error_code, 0);
  EXPECT_TRUE(c.take_ready().empty());
}

TEST(Controller, SingleRankIsReadyAtOnce) {
  Controller c(1);
  c.add(0, req("solo", OpType::kBroadcast));
  std::vector<Response> out = c.take_ready();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, ResponseKind::kExecute);
  EXPECT_EQ(out[0].op_type, OpType::kBroadcast);
}

TEST(Controller, SameNameTwiceFromOneRankCountsOnce) {
  Controller c(2);
  c.add(0, req("dup"));
  c.add(0, req("dup"));
  EXPECT_TRUE(c.take_ready().empty());
  c.add(1, req("dup"));
  EXPECT_EQ(names_of(c.take_ready()), std::vector<std::string>{"dup"});
  // After it was taken, the name starts a fresh negotiation.
  c.add(1, req("dup"));
  EXPECT_TRUE(c.take_ready().empty());
  c.add(0, req("dup"));
  EXPECT_EQ(names_of(c.take_ready()), std::vector<std::string>{"dup"});
}

TEST(Controller, ResponsesFollowTheOrderOfBecomingReady) {
  Controller c(3);
  // rank 0 submits a, b, c; rank 1 c, b, a; rank 2 b, c, a. Interleaved as below, b completes
  // first (its third report), then c, then a.
  const std::vector<std::pair<int, std::string>> seq = {
      {0, "a"}, {1, "c"}, {2, "b"}, {0, "b"}, {1, "b"}, {2, "c"}, {0, "c"}, {1, "a"}, {2, "a"}};
  for (const auto& [rank, name] : seq) c.add(rank, req(name));
  EXPECT_EQ(names_of(c.take_ready()), (std::vector<std::string>{"b", "c", "a"}));
}

TEST(Controller, RandomSubmissionOrders) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int size = 2 + trial % 4;
    const int tensors = 1 + static_cast<int>(rng() % 12);
    // Each rank submits every tensor in its own random order; ranks interleave at random.
    std::vector<std::vector<std::string>> per_rank(size);
    for (auto& list : per_rank) {
      for (int t = 0; t < tensors; ++t) list.push_back("tensor" + std::to_string(t));
      std::shuffle(list.begin(), list.end(), rng);
    }
    std::vector<size_t> next(size, 0);
    std::map<std::string, int> reports;
    std::vector<std::string> expected;
    std::vector<std::string> got;
    Controller c(size);
    for (int left = size * tensors; left > 0; --left) {
      int rank = static_cast<int>(rng() % size);
      while (next[rank] == per_rank[rank].size()) rank = (rank + 1) % size;
      const std::string& name = per_rank[rank][next[rank]++];
      if (++reports[name] == size) expected.push_back(name);
      c.add(rank, req(name));
      if (rng() % 3 == 0) {
        for (const std::string& n : names_of(c.take_ready())) got.push_back(n);
      }
    }
    for (const std::string& n : names_of(c.take_ready())) got.push_back(n);
    EXPECT_EQ(got, expected) << "trial " << trial;
  }
}

TEST(Controller, DtypeMismatch) {
  Response r = negotiate({req("w"), req("w", OpType::kAllreduce, HVD_INT32)});
  expect_mismatch(r, "w", "data type");
  EXPECT_EQ(r.op_type, OpType::kAllreduce);
  EXPECT_EQ(value_of(r.error_message, "rank 0"), "float32");
  EXPECT_EQ(value_of(r.error_message, "rank 1"), "int32");
}

TEST(Controller, MismatchGroupsRanksByValue) {
  Response r = negotiate(
      {req("g"), req("g", OpType::kAllreduce, HVD_INT32), req("g", OpType::kAllreduce, HVD_INT32)});
  expect_mismatch(r, "g", "data type");
  EXPECT_EQ(value_of(r.error_message, "rank 0"), "float32");
  EXPECT_EQ(value_of(r.error_message, "ranks 1, 2"), "int32");

  r = negotiate({req("h"), req("h", OpType::kAllreduce, HVD_FLOAT64), req("h")});
  expect_mismatch(r, "h", "data type");
  EXPECT_EQ(value_of(r.error_message, "ranks 0, 2"), "float32");
  EXPECT_EQ(value_of(r.error_message, "rank 1"), "float64");
}

TEST(Controller, OpTypeMismatch) {
  Response r = negotiate({req("op"), req("op", OpType::kBroadcast)});
  expect_mismatch(r, "op", "operation");
  EXPECT_NE(value_of(r.error_message, "rank 0").find("ALLREDUCE"), std::string::npos);
  EXPECT_NE(value_of(r.error_message, "rank 1").find("BROADCAST"), std::string::npos);
}

TEST(Controller, AllreduceShapeMismatch) {
  Response r = negotiate({req("s"), req("s", OpType::kAllreduce, HVD_FLOAT32, {3, 4})});
  expect_mismatch(r, "s", "shape");
  EXPECT_EQ(value_of(r.error_message, "rank 0"), "[4, 3]");
  EXPECT_EQ(value_of(r.error_message, "rank 1"), "[3, 4]");
  // A scalar is not a one-element vector.
  r = negotiate({req("s0", OpType::kAllreduce, HVD_FLOAT32, {}),
                 req("s0", OpType::kAllreduce, HVD_FLOAT32, {1})});
  expect_mismatch(r, "s0", "shape");
}

TEST(Controller, ScaleFactorMismatch) {
  Request a = req("sc"), b = req("sc");
  b.prescale = 0.5;
  Response r = negotiate({a, b});
  expect_mismatch(r, "sc", "prescale");
  EXPECT_NE(value_of(r.error_message, "rank 0").find('1'), std::string::npos);
  EXPECT_NE(value_of(r.error_message, "rank 1").find("0.5"), std::string::npos);
  b.prescale = 1.0;
  b.postscale = 0.25;
  r = negotiate({a, b});
  expect_mismatch(r, "sc", "postscale");
  EXPECT_NE(value_of(r.error_message, "rank 1").find("0.25"), std::string::npos);
}

// Scale factors that differ only past the sixth significant digit still give different results.
// Fails today: controller.cc compares the factors through strfmt("%g/%g"), which prints 1 and
// 1.0000001 both as "1", so the mismatch goes unnoticed. Enable once that is fixed.
TEST(Controller, ScaleFactorsAreComparedExactly) {
  Request a = req("fine"), b = req("fine");
  b.postscale = 1.0000001;
  expect_mismatch(negotiate({a, b}), "fine", "postscale");
}

TEST(Controller, ReduceOpMismatch) {
  Request a = req("ro"), b = req("ro");
  b.reduce_op = HVD_OP_MAX;
  Response r = negotiate({a, b});
  expect_mismatch(r, "ro", "reduction");
  EXPECT_EQ(value_of(r.error_message, "rank 0"), "sum");
  EXPECT_EQ(value_of(r.error_message, "rank 1"), "max");
}

TEST(Controller, BroadcastRootMismatch) {
  Request a = req("b", OpType::kBroadcast), b = req("b", OpType::kBroadcast);
  b.root = 1;
  Response r = negotiate({a, b});
  expect_mismatch(r, "b", "root");
  EXPECT_EQ(r.op_type, OpType::kBroadcast);
  EXPECT_EQ(value_of(r.error_message, "rank 0"), "0");
  EXPECT_EQ(value_of(r.error_message, "rank 1"), "1");
}

TEST(Controller, AllgatherFirstDimMayDiffer) {
  Response r = negotiate({req("ag", OpType::kAllgather, HVD_INT64, {1, 3, 2}),
                          req("ag", OpType::kAllgather, HVD_INT64, {7, 3, 2}),
                          req("ag", OpType::kAllgather, HVD_INT64, {0, 3, 2})});
  EXPECT_EQ(r.kind, ResponseKind::kExecute) << r.error_message;
  EXPECT_EQ(r.op_type, OpType::kAllgather);
  // Every rank learns every rank's first dimension, in rank order, to place the blocks.
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{1, 7, 0}));
}

TEST(Controller, AllgatherTrailingDimsMismatch) {
  Response r = negotiate({req("ag", OpType::kAllgather, HVD_INT64, {2, 3}),
                          req("ag", OpType::kAllgather, HVD_INT64, {2, 4})});
  expect_mismatch(r, "ag", "shape");
  EXPECT_NE(value_of(r.error_message, "rank 0").find('3'), std::string::npos);
  EXPECT_NE(value_of(r.error_message, "rank 1").find('4'), std::string::npos);
  // A different number of dims is a mismatch too.
  r = negotiate({req("nd", OpType::kAllgather, HVD_INT64, {2, 3}),
                 req("nd", OpType::kAllgather, HVD_INT64, {2, 3, 1})});
  expect_mismatch(r, "nd", "shape");
}

TEST(Controller, DeviceMismatch) {
  Request a = req("dev"), b = req("dev");
  b.device_type = HVD_DEVICE_CUDA;
  Response r = negotiate({a, b});
  expect_mismatch(r, "dev", "device");
  EXPECT_EQ(value_of(r.error_message, "rank 0"), "CPU");
  EXPECT_EQ(value_of(r.error_message, "rank 1"), "GPU");
}

// Rank 1 differs in every property from index `first` of the list on; the error must name the
// property at `first`.
struct Mutation {
  const char* property;
  std::function<void(Request*)> apply;
};

void expect_first_check_wins(OpType type, const std::vector<Mutation>& mutations) {
  for (size_t first = 0; first < mutations.size(); ++first) {
    Request a = req("order", type, HVD_FLOAT32, {2, 3});
    Request b = a;
    for (size_t m = first; m < mutations.size(); ++m) mutations[m].apply(&b);
    Response r = negotiate({a, b, a});
    SCOPED_TRACE(std::string(hvdc::core::op_type_name(type)) +
                 " first difference: " + mutations[first].property);
    expect_mismatch(r, "order", mutations[first].property);
  }
  Request a = req("order", type, HVD_FLOAT32, {2, 3});
  EXPECT_EQ(negotiate({a, a, a}).kind, ResponseKind::kExecute);
}

TEST(Controller, FirstFailingCheckWins) {
  const Mutation dtype{"data type", [](Request* r) { r->dtype = HVD_INT32; }};
  const Mutation shape{"shape", [](Request* r) { r->shape = {3, 2}; }};
  const Mutation scale{"prescale", [](Request* r) { r->prescale = 2.0; }};
  const Mutation reduce{"reduction", [](Request* r) { r->reduce_op = HVD_OP_MIN; }};
  const Mutation trailing{"shape", [](Request* r) { r->shape = {2, 4}; }};
  const Mutation root{"root", [](Request* r) { r->root = 2; }};
  const Mutation device{"device", [](Request* r) { r->device_type = HVD_DEVICE_CUDA; }};
  const Mutation op_to_bcast{"operation", [](Request* r) { r->op_type = OpType::kBroadcast; }};
  const Mutation op_to_reduce{"operation", [](Request* r) { r->op_type = OpType::kAllreduce; }};
  expect_first_check_wins(OpType::kAllreduce, {dtype, op_to_bcast, shape, scale, reduce, device});
  expect_first_check_wins(OpType::kAllgather, {dtype, op_to_reduce, trailing, device});
  expect_first_check_wins(OpType::kBroadcast, {dtype, op_to_reduce, shape, root, device});
}

TEST(Controller, OneMismatchDoesNotDisturbOthers) {
  Controller c(2);
  c.add(0, req("bad"));
  c.add(0, req("good"));
  c.add(1, req("good"));
  c.add(1, req("bad", OpType::kAllreduce, HVD_INT8));
  std::vector<Response> out = c.take_ready();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].names[0], "good");
  EXPECT_EQ(out[0].kind, ResponseKind::kExecute);
  EXPECT_EQ(out[1].names[0], "bad");
  expect_mismatch(out[1], "bad", "data type");
  EXPECT_EQ(value_of(out[1].error_message, "rank 1"), "int8");
}

}  // namespace
