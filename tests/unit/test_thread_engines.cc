// Every collective through real engines, 2..8 of them as threads of this process, connected by
// the in-process bootstrap and the loopback transport. Expected values come from a plain
// sequential reference over the same deterministic per-rank data; every rank's result must be
// bit-identical to every other's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::EngineConfig;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc::core::TensorEntry;
using hvdc_test::on_ranks;
using hvdc_test::ThreadEngines;
using OpStatePtr = std::shared_ptr<OpState>;

// Exact in float32 (multiples of 0.5 in [-4, 4]), so sums in any order agree with the reference
// to within rounding of the final average only.
float float_value(int rank, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + rank * 13) % 17) - 8) * 0.5f;
}
int32_t int_value(int rank, size_t i) {
  return static_cast<int32_t>((i * 31 + rank * 17) % 201) - 100;
}
// Factors whose product over 8 ranks is exact in both types.
float float_factor(int rank, size_t i) {
  static const float kFactors[] = {1.0f, -1.0f, 2.0f, 0.5f};
  return kFactors[(i + rank) % 4];
}
int32_t int_factor(int rank, size_t i) {
  static const int32_t kFactors[] = {1, -1, 2};
  return kFactors[(i + rank * 2) % 3];
}

// The reference reduction of n ranks' values, in double (float) or int64 (int).
template <typename T>
double reduce_reference(int32_t op, int n, const std::function<T(int)>& value) {
  double acc = value(0);
  int64_t iacc = static_cast<int64_t>(value(0));
  for (int r = 1; r < n; ++r) {
    const T v = value(r);
    switch (op) {
      case HVD_OP_MIN:
        acc = std::min(acc, static_cast<double>(v));
        break;
      case HVD_OP_MAX:
        acc = std::max(acc, static_cast<double>(v));
        break;
      case HVD_OP_PRODUCT:
        acc *= static_cast<double>(v);
        break;
      default:
        acc += static_cast<double>(v);
        iacc += static_cast<int64_t>(v);
        break;
    }
  }
  if (op != HVD_OP_AVERAGE) return acc;
  if (std::is_integral<T>::value) return static_cast<double>(iacc / n);  // truncates toward 0
  return acc / n;
}

// Success when every rank's status is ok; else names the first rank that failed and why.
::testing::AssertionResult all_ok(const std::vector<Status>& status) {
  for (size_t r = 0; r < status.size(); ++r) {
    if (!status[r].is_ok()) {
      return ::testing::AssertionFailure() << "rank " << r << ": " << status[r].message();
    }
  }
  return ::testing::AssertionSuccess();
}

class ThreadEnginesTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    EngineConfig config;
    config.hostname = "thread-engines";
    Status st = ThreadEngines::start(GetParam(), config, &job_);
    ASSERT_TRUE(st.is_ok()) << st.message();
  }
  void TearDown() override {
    if (!job_) return;
    EXPECT_TRUE(all_ok(job_->shutdown()));
  }
  int n() const { return GetParam(); }
  hvdc::core::Engine& engine(int rank) { return job_->engine(rank); }

  std::unique_ptr<ThreadEngines> job_;
};

struct AllreduceCase {
  std::string name;
  int32_t dtype;
  int32_t op;
  size_t count;
};

std::vector<AllreduceCase> allreduce_cases() {
  std::vector<AllreduceCase> cases;
  for (int32_t op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
    for (int32_t dtype : {HVD_FLOAT32, HVD_INT32}) {
      cases.push_back({"ar." + std::to_string(op) + "." + std::to_string(dtype), dtype, op, 1000});
    }
  }
  // Past small_allreduce_bytes: the ring rather than the direct exchange.
  cases.push_back({"ar.ring.f", HVD_FLOAT32, HVD_OP_SUM, 40000});
  cases.push_back({"ar.ring.i", HVD_INT32, HVD_OP_AVERAGE, 40001});
  return cases;
}

// Fills rank r's input of one case (4-byte elements either way).
void fill_input(const AllreduceCase& c, int rank, std::vector<char>* buf) {
  buf->resize(c.count * 4);
  for (size_t i = 0; i < c.count; ++i) {
    if (c.dtype == HVD_FLOAT32) {
      const float v = c.op == HVD_OP_PRODUCT ? float_factor(rank, i) : float_value(rank, i);
      std::memcpy(buf->data() + i * 4, &v, 4);
    } else {
      const int32_t v = c.op == HVD_OP_PRODUCT ? int_factor(rank, i) : int_value(rank, i);
      std::memcpy(buf->data() + i * 4, &v, 4);
    }
  }
}

// Counts (and reports the first few of) the elements of `out` that differ from the reference.
size_t check_allreduce(const AllreduceCase& c, int n, const std::vector<char>& out) {
  size_t wrong = 0;
  for (size_t i = 0; i < c.count; ++i) {
    double expected = 0, got = 0, tol = 0;
    if (c.dtype == HVD_FLOAT32) {
      auto v = [&](int r) {
        return c.op == HVD_OP_PRODUCT ? float_factor(r, i) : float_value(r, i);
      };
      expected = reduce_reference<float>(c.op, n, v);
      float f;
      std::memcpy(&f, out.data() + i * 4, 4);
      got = f;
      tol = 1e-6 * (1 + std::fabs(expected));
    } else {
      auto v = [&](int r) { return c.op == HVD_OP_PRODUCT ? int_factor(r, i) : int_value(r, i); };
      expected = reduce_reference<int32_t>(c.op, n, v);
      int32_t x;
      std::memcpy(&x, out.data() + i * 4, 4);
      got = x;
    }
    if (std::fabs(got - expected) > tol && wrong++ < 3) {
      ADD_FAILURE() << c.name << "[" << i << "] = " << got << ", expected " << expected;
    }
  }
  return wrong;
}

TEST_P(ThreadEnginesTest, AllreduceEveryOpAndDtype) {
  const std::vector<AllreduceCase> cases = allreduce_cases();
  std::vector<std::vector<std::vector<char>>> out(n(),
                                                  std::vector<std::vector<char>>(cases.size()));
  std::vector<int> failures(n(), 0);
  on_ranks(n(), [&](int r) {
    std::vector<std::vector<char>> in(cases.size());
    std::vector<OpStatePtr> states(cases.size());
    for (size_t k = 0; k < cases.size(); ++k) {  // all in flight at once: fusion takes part
      const AllreduceCase& c = cases[k];
      fill_input(c, r, &in[k]);
      out[r][k].assign(c.count * 4, 0);
      Request req = hvdc_test::make_request(c.name, OpType::kAllreduce, c.dtype,
                                            {static_cast<int64_t>(c.count)});
      req.reduce_op = c.op;
      if (!hvdc_test::submit(engine(r), hvdc_test::make_entry(req, in[k].data(), out[r][k].data()),
                             &states[k])
               .is_ok()) {
        ++failures[r];
      }
    }
    for (const OpStatePtr& s : states) failures[r] += hvdc_test::await(s).is_ok() ? 0 : 1;
  });
  for (int r = 0; r < n(); ++r) ASSERT_EQ(failures[r], 0) << "rank " << r;
  for (size_t k = 0; k < cases.size(); ++k) {
    EXPECT_EQ(check_allreduce(cases[k], n(), out[0][k]), 0u) << cases[k].name;
    for (int r = 1; r < n(); ++r) EXPECT_EQ(out[r][k], out[0][k]) << cases[k].name << " rank " << r;
  }
}

TEST_P(ThreadEnginesTest, ScaledAndGroupedAllreduce) {
  constexpr size_t kCounts[] = {3, 700, 5000};
  std::vector<std::vector<std::vector<float>>> out(n(), std::vector<std::vector<float>>(3));
  std::vector<int> failures(n(), 0);
  on_ranks(n(), [&](int r) {
    std::vector<std::vector<float>> in(3);
    std::vector<TensorEntry> group;
    for (size_t k = 0; k < 3; ++k) {
      for (size_t i = 0; i < kCounts[k]; ++i) in[k].push_back(float_value(r, i + k));
      out[r][k].assign(kCounts[k], 0.0f);
      Request req = hvdc_test::make_request("grp." + std::to_string(k), OpType::kAllreduce,
                                            HVD_FLOAT32, {static_cast<int64_t>(kCounts[k])});
      req.reduce_op = HVD_OP_SUM;
      req.prescale = 0.5;
      req.postscale = 4.0;
      group.push_back(hvdc_test::make_entry(req, in[k].data(), out[r][k].data()));
    }
    std::vector<OpStatePtr> states;
    for (const TensorEntry& e : group) states.push_back(e.state);
    if (!engine(r).enqueue_group(std::move(group)).is_ok()) ++failures[r];
    for (const OpStatePtr& s : states) failures[r] += hvdc_test::await(s).is_ok() ? 0 : 1;
  });
  for (int r = 0; r < n(); ++r) ASSERT_EQ(failures[r], 0) << "rank " << r;
  for (size_t k = 0; k < 3; ++k) {
    for (size_t i = 0; i < kCounts[k]; ++i) {
      double sum = 0;
      for (int q = 0; q < n(); ++q) sum += 0.5 * float_value(q, i + k);
      ASSERT_EQ(out[0][k][i], static_cast<float>(sum * 4.0)) << "tensor " << k << " [" << i << "]";
    }
    for (int r = 1; r < n(); ++r) EXPECT_EQ(out[r][k], out[0][k]) << "rank " << r;
  }
}

TEST_P(ThreadEnginesTest, AllgatherOfUnevenFirstDimensions) {
  auto rows_of = [](int r) { return static_cast<int64_t>(r % 3 + 1); };
  auto value = [](int r, int64_t row, int col) {
    return r * 1000 + static_cast<int>(row) * 2 + col;
  };
  std::vector<std::vector<int32_t>> out(n());
  std::vector<Status> status(n());
  on_ranks(n(), [&](int r) {
    std::vector<int32_t> in;
    for (int64_t row = 0; row < rows_of(r); ++row) {
      for (int col = 0; col < 2; ++col) in.push_back(value(r, row, col));
    }
    OpStatePtr state;
    Request req = hvdc_test::make_request("gather", OpType::kAllgather, HVD_INT32, {rows_of(r), 2});
    status[r] = hvdc_test::run(engine(r), hvdc_test::make_entry(req, in.data(), nullptr), &state);
    hvd_tensor_t t;
    if (status[r].is_ok() && state->output(&t)) {
      const auto* data = static_cast<const int32_t*>(t.data);
      out[r].assign(data, data + t.shape[0] * 2);
    }
  });
  std::vector<int32_t> expected;
  for (int q = 0; q < n(); ++q) {
    for (int64_t row = 0; row < rows_of(q); ++row) {
      for (int col = 0; col < 2; ++col) expected.push_back(value(q, row, col));
    }
  }
  ASSERT_TRUE(all_ok(status));
  for (int r = 0; r < n(); ++r) {
    EXPECT_EQ(out[r], expected) << "rank " << r;
  }
}

TEST_P(ThreadEnginesTest, BroadcastFromTheLastRank) {
  constexpr size_t kCount = 3001;
  const int root = n() - 1;
  std::vector<std::vector<double>> out(n(), std::vector<double>(kCount));
  std::vector<Status> status(n());
  on_ranks(n(), [&](int r) {
    std::vector<double> in(kCount);
    for (size_t i = 0; i < kCount; ++i) in[i] = r * 1e6 + static_cast<double>(i) / 3;
    Request req = hvdc_test::make_request("bcast", OpType::kBroadcast, HVD_FLOAT64,
                                          {static_cast<int64_t>(kCount)});
    req.root = root;
    status[r] = hvdc_test::run(engine(r), hvdc_test::make_entry(req, in.data(), out[r].data()));
  });
  ASSERT_TRUE(all_ok(status));
  for (int r = 0; r < n(); ++r) {
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(out[r][i], root * 1e6 + static_cast<double>(i) / 3)
          << "rank " << r << " [" << i << "]";
    }
  }
}

TEST_P(ThreadEnginesTest, AlltoallWithUnevenSplits) {
  // Rank s sends (s + d) % 3 rows (some none) of two elements to rank d.
  auto rows = [](int s, int d) { return static_cast<int64_t>((s + d) % 3); };
  auto value = [](int s, int d, int64_t k) { return s * 10000 + d * 100 + static_cast<int>(k); };
  std::vector<std::vector<int32_t>> out(n());
  std::vector<std::vector<int64_t>> received(n());
  std::vector<Status> status(n());
  on_ranks(n(), [&](int r) {
    std::vector<int32_t> in;
    std::vector<int64_t> splits;
    for (int d = 0; d < n(); ++d) {
      splits.push_back(rows(r, d));
      for (int64_t k = 0; k < rows(r, d) * 2; ++k) in.push_back(value(r, d, k));
    }
    const int64_t total = static_cast<int64_t>(in.size() / 2);
    Request req = hvdc_test::make_request("a2a", OpType::kAlltoall, HVD_INT32, {total, 2});
    TensorEntry entry = hvdc_test::make_entry(req, in.data(), nullptr);
    entry.splits = splits;
    OpStatePtr state;
    status[r] = hvdc_test::run(engine(r), std::move(entry), &state);
    hvd_tensor_t t;
    if (status[r].is_ok() && state->output(&t)) {
      const auto* data = static_cast<const int32_t*>(t.data);
      out[r].assign(data, data + t.shape[0] * 2);
      received[r] = state->received_splits();
    }
  });
  ASSERT_TRUE(all_ok(status));
  for (int r = 0; r < n(); ++r) {
    std::vector<int32_t> expected;
    std::vector<int64_t> expected_splits;
    for (int s = 0; s < n(); ++s) {
      expected_splits.push_back(rows(s, r));
      for (int64_t k = 0; k < rows(s, r) * 2; ++k) expected.push_back(value(s, r, k));
    }
    EXPECT_EQ(out[r], expected) << "rank " << r;
    EXPECT_EQ(received[r], expected_splits) << "rank " << r;
  }
}

TEST_P(ThreadEnginesTest, ReducescatterSumAndAverageOfUnevenRows) {
  const int64_t rows = 2 * n() + 1;  // the first rank gets one row more than the others
  constexpr int kCols = 3;
  auto part_rows = [&](int r) { return rows / n() + (r < rows % n() ? 1 : 0); };
  auto first_row = [&](int r) {
    int64_t first = 0;
    for (int q = 0; q < r; ++q) first += part_rows(q);
    return first;
  };
  for (int32_t op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
    SCOPED_TRACE(op == HVD_OP_SUM ? "sum" : "average");
    std::vector<std::vector<float>> out(n());
    std::vector<Status> status(n());
    on_ranks(n(), [&](int r) {
      std::vector<float> in(rows * kCols);
      for (size_t i = 0; i < in.size(); ++i) in[i] = float_value(r, i);
      out[r].assign(part_rows(r) * kCols, 0.0f);
      Request req = hvdc_test::make_request("rs." + std::to_string(op), OpType::kReducescatter,
                                            HVD_FLOAT32, {rows, kCols});
      req.reduce_op = op;
      status[r] = hvdc_test::run(engine(r), hvdc_test::make_entry(req, in.data(), out[r].data()));
    });
    ASSERT_TRUE(all_ok(status));
    for (int r = 0; r < n(); ++r) {
      for (size_t j = 0; j < out[r].size(); ++j) {
        const size_t i = static_cast<size_t>(first_row(r)) * kCols + j;
        const double expected =
            reduce_reference<float>(op, n(), [&](int q) { return float_value(q, i); });
        ASSERT_NEAR(out[r][j], expected, 1e-6 * (1 + std::fabs(expected))) << "rank " << r;
      }
    }
  }
}

TEST_P(ThreadEnginesTest, BarrierCompletesEverywhere) {
  std::vector<Status> status(n());
  on_ranks(n(), [&](int r) {
    for (int k = 0; k < 3 && status[r].is_ok(); ++k) {
      Request req =
          hvdc_test::make_request("barrier." + std::to_string(k), OpType::kBarrier, HVD_UINT8, {});
      status[r] = hvdc_test::run(engine(r), hvdc_test::make_entry(req, nullptr, nullptr));
    }
  });
  EXPECT_TRUE(all_ok(status));
}

// The last rank joins at once; the others run an allreduce without it (it counts as zeros),
// then join. Every rank's join reports the same last rank, one of the others.
TEST_P(ThreadEnginesTest, JoinedRankContributesZeros) {
  constexpr size_t kCount = 100;
  const int joiner = n() - 1;
  std::vector<std::vector<float>> out(n(), std::vector<float>(kCount));
  std::vector<Status> reduced(n()), joined(n());
  std::vector<int32_t> last(n(), -2);
  on_ranks(n(), [&](int r) {
    Request join = hvdc_test::make_request(hvdc::core::kJoinName, OpType::kJoin, HVD_UINT8, {});
    if (r != joiner) {
      std::vector<float> in(kCount);
      for (size_t i = 0; i < kCount; ++i) in[i] = float_value(r, i);
      Request req = hvdc_test::make_request("while.joined", OpType::kAllreduce, HVD_FLOAT32,
                                            {static_cast<int64_t>(kCount)});
      req.reduce_op = HVD_OP_SUM;
      reduced[r] = hvdc_test::run(engine(r), hvdc_test::make_entry(req, in.data(), out[r].data()));
    }
    OpStatePtr state;
    joined[r] = hvdc_test::run(engine(r), hvdc_test::make_entry(join, nullptr, nullptr), &state);
    if (joined[r].is_ok()) last[r] = state->result_value();
  });
  ASSERT_TRUE(all_ok(joined));
  for (int r = 0; r < n(); ++r) {
    EXPECT_EQ(last[r], last[0]) << "rank " << r;
    if (r == joiner) continue;
    ASSERT_TRUE(reduced[r].is_ok()) << "rank " << r << ": " << reduced[r].message();
    for (size_t i = 0; i < kCount; ++i) {
      double sum = 0;
      for (int q = 0; q < n(); ++q) sum += q == joiner ? 0.0 : float_value(q, i);
      ASSERT_EQ(out[r][i], static_cast<float>(sum)) << "rank " << r << " [" << i << "]";
    }
  }
  EXPECT_GE(last[0], 0);
  EXPECT_LT(last[0], joiner);
}

// Idle engines sleep until the loopback transport wakes them: over half a second, eight of them
// ask it for progress a few times each (their sleeps are bounded at 100 ms). An engine thread
// that polled would ask thousands of times, however loaded the machine.
TEST(ThreadEnginesIdle, IdleEnginesSleep) {
  std::unique_ptr<ThreadEngines> job;
  hvdc::core::EngineConfig config;
  config.hostname = "thread-engines";
  ASSERT_TRUE(ThreadEngines::start(8, config, &job).is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // past start-up
  const uint64_t before = job->fabric().progress_calls();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t calls = job->fabric().progress_calls() - before;
  EXPECT_LT(calls, 8u * 20) << "8 idle engines asked for progress " << calls << " times in 0.5 s";
  EXPECT_TRUE(all_ok(job->shutdown()));
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadEnginesTest, ::testing::Range(2, 9),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

}  // namespace
