// Engines as threads in one process: in-process bootstrap, real UCX between the ranks. Expected
// results come from a sequential reference over the same deterministic per-rank data.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/inprocess.h"
#include "core/engine.h"
#include "core/op_state.h"
#include "core/tensor_queue.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::Engine;
using hvdc::core::EngineConfig;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::TensorEntry;

// Runs fn(rank) on n threads at once and joins them.
void on_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

std::vector<std::unique_ptr<Engine>> start_engines(int n) {
  auto group = hvdc::bootstrap::InProcessGroup::create(n);
  std::vector<std::unique_ptr<Engine>> engines(n);
  std::vector<Status> status(n);
  EngineConfig config;
  config.hostname = "unit-test-host";
  on_ranks(n, [&](int r) { status[r] = Engine::start(group->member(r), config, &engines[r]); });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(status[r].is_ok()) << "rank " << r << ": " << status[r].message();
  }
  return engines;
}

void shutdown_engines(std::vector<std::unique_ptr<Engine>>& engines) {
  const int n = static_cast<int>(engines.size());
  std::vector<Status> status(n);
  on_ranks(n, [&](int r) {
    if (engines[r]) status[r] = engines[r]->shutdown();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(status[r].is_ok()) << "rank " << r << ": " << status[r].message();
  }
  engines.clear();
}

std::shared_ptr<OpState> submit(Engine& engine, const std::string& name, int32_t dtype,
                                int32_t reduce_op, const void* in, void* out, size_t count,
                                Status* enqueue_status) {
  TensorEntry entry;
  entry.request.name = name;
  entry.request.op_type = OpType::kAllreduce;
  entry.request.dtype = dtype;
  entry.request.reduce_op = reduce_op;
  entry.request.device_type = HVD_DEVICE_CPU;
  entry.request.device_id = 0;
  entry.request.shape = {static_cast<int64_t>(count)};
  entry.request.prescale = 1.0;
  entry.request.postscale = 1.0;
  entry.input = in;
  entry.output = out;
  entry.state = std::make_shared<OpState>(nullptr, nullptr);
  std::shared_ptr<OpState> state = entry.state;
  *enqueue_status = engine.enqueue(std::move(entry));
  return state;
}

// Waits for the op, giving up (instead of hanging the suite) after 20 s.
Status await(const std::shared_ptr<OpState>& state) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!state->done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!state->done()) return Status(HVD_ERR_TIMEOUT, "test gave up waiting after 20 s");
  return state->wait(0);
}

Status allreduce(Engine& engine, const std::string& name, int32_t dtype, int32_t reduce_op,
                 const void* in, void* out, size_t count) {
  Status enqueued;
  std::shared_ptr<OpState> state =
      submit(engine, name, dtype, reduce_op, in, out, count, &enqueued);
  if (!enqueued.is_ok()) return enqueued;
  return await(state);
}

float float_input(int rank, size_t i) {
  return static_cast<float>(std::sin(0.001 * static_cast<double>(i) + rank) * 100.0);
}

int32_t int_input(int rank, size_t i) {
  uint32_t v = static_cast<uint32_t>(i) * 2654435761u + static_cast<uint32_t>(rank) * 0x9E3779B9u;
  return static_cast<int32_t>(v ^ (v >> 13));
}

class EngineTest : public ::testing::TestWithParam<int> {};

TEST_P(EngineTest, AllreduceFloatSumAndIntMax) {
  const int n = GetParam();
  std::vector<std::unique_ptr<Engine>> engines = start_engines(n);
  ASSERT_EQ(engines.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) ASSERT_NE(engines[r], nullptr);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(engines[r]->topology().rank, r);
    EXPECT_EQ(engines[r]->topology().size, n);
    EXPECT_EQ(engines[r]->topology().local_rank, r);
    EXPECT_EQ(engines[r]->topology().local_size, n);
  }

  for (size_t count : {size_t{1}, size_t{1000}, size_t{300000}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::vector<std::vector<float>> fout(n, std::vector<float>(count));
    std::vector<std::vector<int32_t>> iout(n);
    std::vector<Status> fst(n), ist(n);
    on_ranks(n, [&](int r) {
      std::vector<float> fin(count);
      for (size_t i = 0; i < count; ++i) fin[i] = float_input(r, i);
      fst[r] = allreduce(*engines[r], "f.sum." + std::to_string(count), HVD_FLOAT32, HVD_OP_SUM,
                         fin.data(), fout[r].data(), count);
      // int32 max in place.
      iout[r].resize(count);
      for (size_t i = 0; i < count; ++i) iout[r][i] = int_input(r, i);
      ist[r] = allreduce(*engines[r], "i.max." + std::to_string(count), HVD_INT32, HVD_OP_MAX,
                         iout[r].data(), iout[r].data(), count);
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(fst[r].is_ok()) << "rank " << r << ": " << fst[r].message();
      ASSERT_TRUE(ist[r].is_ok()) << "rank " << r << ": " << ist[r].message();
    }
    size_t wrong_f = 0, wrong_i = 0;
    for (size_t i = 0; i < count; ++i) {
      double sum = 0, sum_abs = 0;
      int32_t max = int_input(0, i);
      for (int r = 0; r < n; ++r) {
        sum += static_cast<double>(float_input(r, i));
        sum_abs += std::fabs(static_cast<double>(float_input(r, i)));
        if (int_input(r, i) > max) max = int_input(r, i);
      }
      const double tol = 2.0 * n * 1.2e-7 * sum_abs + 1e-30;
      if (std::fabs(static_cast<double>(fout[0][i]) - sum) > tol && wrong_f++ < 5) {
        ADD_FAILURE() << "float sum [" << i << "] = " << fout[0][i] << ", expected " << sum;
      }
      if (iout[0][i] != max && wrong_i++ < 5) {
        ADD_FAILURE() << "int max [" << i << "] = " << iout[0][i] << ", expected " << max;
      }
    }
    EXPECT_EQ(wrong_f, 0u);
    EXPECT_EQ(wrong_i, 0u);
    for (int r = 1; r < n; ++r) {
      EXPECT_EQ(std::memcmp(fout[r].data(), fout[0].data(), count * sizeof(float)), 0)
          << "rank " << r << " differs from rank 0";
      EXPECT_EQ(iout[r], iout[0]) << "rank " << r << " differs from rank 0";
    }
  }
  shutdown_engines(engines);
}

TEST_P(EngineTest, MismatchFailsEverywhereThenNextOpWorks) {
  const int n = GetParam();
  std::vector<std::unique_ptr<Engine>> engines = start_engines(n);
  ASSERT_EQ(engines.size(), static_cast<size_t>(n));
  std::vector<Status> bad(n), good(n);
  std::vector<std::vector<float>> out(n, std::vector<float>(16));
  on_ranks(n, [&](int r) {
    // The last rank submits int32 where every other rank submits float32.
    const int32_t dtype = r == n - 1 ? HVD_INT32 : HVD_FLOAT32;
    std::vector<char> in(16 * 4, 1), res(16 * 4);
    bad[r] = allreduce(*engines[r], "mixed", dtype, HVD_OP_SUM, in.data(), res.data(), 16);
    std::vector<float> fin(16, static_cast<float>(r + 1));
    good[r] =
        allreduce(*engines[r], "after", HVD_FLOAT32, HVD_OP_SUM, fin.data(), out[r].data(), 16);
  });
  const float expected = static_cast<float>(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(bad[r].code(), HVD_ERR_MISMATCH) << "rank " << r << ": " << bad[r].message();
    EXPECT_NE(bad[r].message().find("mixed"), std::string::npos) << bad[r].message();
    EXPECT_NE(bad[r].message().find("int32"), std::string::npos) << bad[r].message();
    EXPECT_NE(bad[r].message().find("float32"), std::string::npos) << bad[r].message();
    ASSERT_TRUE(good[r].is_ok()) << "rank " << r << ": " << good[r].message();
    for (float v : out[r]) EXPECT_EQ(v, expected);
    EXPECT_TRUE(engines[r]->async_error().is_ok());
  }
  shutdown_engines(engines);
}

TEST_P(EngineTest, RanksSubmitInDifferentOrders) {
  const int n = GetParam();
  constexpr int kTensors = 6;
  constexpr size_t kCount = 257;
  std::vector<std::unique_ptr<Engine>> engines = start_engines(n);
  ASSERT_EQ(engines.size(), static_cast<size_t>(n));
  std::vector<std::vector<std::vector<int32_t>>> out(
      n, std::vector<std::vector<int32_t>>(kTensors, std::vector<int32_t>(kCount)));
  std::vector<int> failures(n, 0);
  on_ranks(n, [&](int r) {
    std::vector<std::vector<int32_t>> in(kTensors, std::vector<int32_t>(kCount));
    std::vector<std::shared_ptr<OpState>> states(kTensors);
    // Rank r submits tensors starting at r (rotated), all before waiting on any.
    for (int k = 0; k < kTensors; ++k) {
      const int t = (k + r) % kTensors;
      for (size_t i = 0; i < kCount; ++i) in[t][i] = int_input(r, i) % 1000 + t;
      Status enqueued;
      states[t] = submit(*engines[r], "rot." + std::to_string(t), HVD_INT32, HVD_OP_SUM,
                         in[t].data(), out[r][t].data(), kCount, &enqueued);
      if (!enqueued.is_ok()) ++failures[r];
    }
    for (int t = 0; t < kTensors; ++t) {
      if (!await(states[t]).is_ok()) ++failures[r];
    }
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(failures[r], 0) << "rank " << r;
    for (int t = 0; t < kTensors; ++t) {
      for (size_t i = 0; i < kCount; ++i) {
        int32_t sum = 0;
        for (int q = 0; q < n; ++q) sum += int_input(q, i) % 1000 + t;
        ASSERT_EQ(out[r][t][i], sum) << "rank " << r << " tensor " << t << " [" << i << "]";
      }
    }
  }
  shutdown_engines(engines);
}

TEST_P(EngineTest, DuplicateInFlightNameFailsAtOnce) {
  const int n = GetParam();
  std::vector<std::unique_ptr<Engine>> engines = start_engines(n);
  ASSERT_EQ(engines.size(), static_cast<size_t>(n));
  std::atomic<bool> checked{false};
  Status duplicate;
  std::vector<Status> result(n);
  on_ranks(n, [&](int r) {
    float in = 1.0f, out = 0.0f;
    if (r == 0) {
      // No other rank has submitted "d" yet, so it is still in flight here.
      Status enqueued;
      std::shared_ptr<OpState> first =
          submit(*engines[0], "d", HVD_FLOAT32, HVD_OP_SUM, &in, &out, 1, &enqueued);
      EXPECT_TRUE(enqueued.is_ok());
      float in2 = 5.0f, out2 = 0.0f;
      submit(*engines[0], "d", HVD_FLOAT32, HVD_OP_SUM, &in2, &out2, 1, &duplicate);
      checked.store(true);
      result[0] = await(first);
    } else {
      while (!checked.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      result[r] = allreduce(*engines[r], "d", HVD_FLOAT32, HVD_OP_SUM, &in, &out, 1);
    }
    if (result[r].is_ok()) {
      EXPECT_EQ(out, static_cast<float>(n)) << "rank " << r;
    }
  });
  EXPECT_EQ(duplicate.code(), HVD_ERR_DUPLICATE_NAME) << duplicate.message();
  EXPECT_NE(duplicate.message().find("'d'"), std::string::npos) << duplicate.message();
  for (int r = 0; r < n; ++r) EXPECT_TRUE(result[r].is_ok()) << result[r].message();
  shutdown_engines(engines);
}

INSTANTIATE_TEST_SUITE_P(Ranks, EngineTest, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

TEST(EngineSingle, OneRankNeedsNoTransport) {
  std::vector<std::unique_ptr<Engine>> engines = start_engines(1);
  ASSERT_EQ(engines.size(), 1u);
  ASSERT_NE(engines[0], nullptr);
  std::vector<int32_t> buf = {3, -7, 11};
  Status st = allreduce(*engines[0], "solo", HVD_INT32, HVD_OP_MAX, buf.data(), buf.data(), 3);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(buf, (std::vector<int32_t>{3, -7, 11}));
  shutdown_engines(engines);
}

TEST(EngineSingle, SubmitAfterShutdownFails) {
  std::vector<std::unique_ptr<Engine>> engines = start_engines(1);
  ASSERT_EQ(engines.size(), 1u);
  Engine* engine = engines[0].get();
  ASSERT_TRUE(engine->shutdown().is_ok());
  float x = 1.0f;
  Status enqueued;
  submit(*engine, "late", HVD_FLOAT32, HVD_OP_SUM, &x, &x, 1, &enqueued);
  EXPECT_EQ(enqueued.code(), HVD_ERR_SHUT_DOWN) << enqueued.message();
  EXPECT_TRUE(engine->shutdown().is_ok());  // a second shutdown is harmless
  engines.clear();
}

}  // namespace
