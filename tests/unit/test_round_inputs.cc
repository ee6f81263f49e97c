// Cached host allreduces whose inputs come with the negotiation round (HVDC_ROUND_INPUT_BYTES,
// core/negotiation/round_inputs.cc): every dtype and op, odd sizes, in and out of place, fused,
// at 2..5 ranks. The results must be bit-identical to those of a job that sends no inputs (the
// direct exchange reduces in the same member order with the same kernels) and equal on every
// rank (NaN payloads aside, see expect_same_results), and the engines' counters must show which
// path ran.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "kernel_reference.h"
#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::EngineConfig;
using hvdc::core::OpState;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc_test::on_ranks;
using hvdc_test::ThreadEngines;
using kernel_test::Bytes;

struct Case {
  std::string name;
  int32_t dtype;
  int32_t op;
  size_t count;
  bool in_place;
};

std::vector<Case> every_dtype_and_op() {
  constexpr size_t kCounts[] = {1, 3, 17, 61, 255};
  std::vector<Case> cases;
  for (int32_t dtype : kernel_test::kAllDtypes) {
    for (int32_t op : kernel_test::kAllOps) {
      if (dtype == HVD_BOOL && op == HVD_OP_AVERAGE) continue;  // rejected at submission
      const size_t k = cases.size();
      cases.push_back({"ri." + std::to_string(dtype) + "." + std::to_string(op), dtype, op,
                       kCounts[k % 5], k % 3 == 0});
    }
  }
  return cases;
}

// What one job computed: out[step][rank][case], and each rank's counters at the end.
struct JobResult {
  std::vector<std::vector<std::vector<Bytes>>> out;
  std::vector<uint64_t> with_inputs, collectives;
};

// Rank r's input of case k at `step`: random bits with the dtype's edge values, the same in
// every job.
Bytes input_of(const Case& c, size_t k, int rank, int step) {
  kernel_test::Rng rng(1000003 * step + 7919 * k + rank);
  Bytes in(c.count * hvdc::common::dtype_size(c.dtype));
  kernel_test::fill_random(c.dtype, in.data(), c.count, rng);
  return in;
}

// Every rank submits every case at once (fusion takes part), `steps` times under the same
// names: from the second step on, they are cached.
JobResult run_job(int n, const std::vector<Case>& cases, int steps, const EngineConfig& config,
                  const ThreadEngines::PerRankConfig& per_rank = nullptr) {
  JobResult result;
  std::unique_ptr<ThreadEngines> job;
  Status st = ThreadEngines::start(n, config, &job, per_rank);
  EXPECT_TRUE(st.is_ok()) << st.message();
  if (!st.is_ok()) return result;
  result.out.assign(steps, std::vector<std::vector<Bytes>>(n, std::vector<Bytes>(cases.size())));
  for (int step = 0; step < steps; ++step) {
    on_ranks(n, [&](int r) {
      std::vector<Bytes> in(cases.size());
      std::vector<std::shared_ptr<OpState>> states(cases.size());
      for (size_t k = 0; k < cases.size(); ++k) {
        const Case& c = cases[k];
        in[k] = input_of(c, k, r, step);
        Bytes& out = result.out[step][r][k];
        out = c.in_place ? in[k] : Bytes(in[k].size(), 0xA5);
        Request req = hvdc_test::make_request(c.name, OpType::kAllreduce, c.dtype,
                                              {static_cast<int64_t>(c.count)});
        req.reduce_op = c.op;
        const void* input = c.in_place ? out.data() : in[k].data();
        Status submitted = hvdc_test::submit(
            job->engine(r), hvdc_test::make_entry(req, input, out.data()), &states[k]);
        EXPECT_TRUE(submitted.is_ok()) << c.name << ": " << submitted.message();
      }
      for (size_t k = 0; k < cases.size(); ++k) {
        if (!states[k]) continue;
        Status done = hvdc_test::await(states[k]);
        EXPECT_TRUE(done.is_ok()) << "rank " << r << " " << cases[k].name << ": " << done.message();
      }
    });
  }
  for (int r = 0; r < n; ++r) {
    result.with_inputs.push_back(job->engine(r).stats().round_input_collectives.load());
    result.collectives.push_back(job->engine(r).stats().collectives.load());
  }
  for (const Status& s : job->shutdown()) EXPECT_TRUE(s.is_ok()) << s.message();
  return result;
}

EngineConfig config_with(size_t round_input_bytes) {
  EngineConfig config;
  config.hostname = "round-inputs";
  config.round_input_bytes = round_input_bytes;
  return config;
}

// Bit equality with the job without inputs and with rank 0, where a NaN matches any quiet NaN:
// the kernels compute a op b in one order, but which NaN a sum of two NaNs (or of infinities
// of opposite signs) keeps depends on the code path the compiler chose for the aliasing at hand.
void expect_same_results(const std::vector<Case>& cases, const JobResult& got,
                         const JobResult& want) {
  ASSERT_EQ(got.out.size(), want.out.size());
  for (size_t step = 0; step < got.out.size(); ++step) {
    for (size_t r = 0; r < got.out[step].size(); ++r) {
      for (size_t k = 0; k < cases.size(); ++k) {
        const Case& c = cases[k];
        const Bytes& a = got.out[step][r][k];
        const Bytes& b = want.out[step][r][k];
        ASSERT_EQ(a.size(), b.size());
        const size_t size = hvdc::common::dtype_size(c.dtype);
        const Bytes& first = got.out[step][0][k];
        size_t wrong = 0;
        for (size_t i = 0; i < c.count; ++i) {
          const uint8_t* x = &a[i * size];
          if (kernel_test::same_elem(c.dtype, x, &b[i * size]) &&
              kernel_test::same_elem(c.dtype, x, &first[i * size])) {
            continue;
          }
          if (wrong++ < 3) {
            ADD_FAILURE() << c.name << " step " << step << " rank " << r << " [" << i
                          << "]: " << kernel_test::elem_str(c.dtype, x) << ", expected "
                          << kernel_test::elem_str(c.dtype, &b[i * size]) << ", rank 0 has "
                          << kernel_test::elem_str(c.dtype, &first[i * size]);
          }
        }
      }
    }
  }
}

class RoundInputsTest : public ::testing::TestWithParam<int> {
 protected:
  int n() const { return GetParam(); }
};

TEST_P(RoundInputsTest, EveryDtypeAndOpMatchesTheExchangeBitForBit) {
  const std::vector<Case> cases = every_dtype_and_op();
  const JobResult with = run_job(n(), cases, 3, config_with(64 << 10));
  const JobResult without = run_job(n(), cases, 3, config_with(0));
  expect_same_results(cases, with, without);
  for (int r = 0; r < n(); ++r) {
    EXPECT_GT(with.with_inputs[r], 0u) << "rank " << r;
    EXPECT_EQ(without.with_inputs[r], 0u) << "rank " << r;
  }
}

// The default budget carries one 4 KiB input per round message: of four cached 4 KiB tensors
// ready at once, some run on the round's inputs and the others through the exchange.
TEST_P(RoundInputsTest, InputsBeyondTheBudgetTakeTheExchange) {
  std::vector<Case> cases;
  for (int k = 0; k < 4; ++k) {
    cases.push_back({"budget." + std::to_string(k), HVD_FLOAT32, HVD_OP_SUM, 1024, k == 2});
  }
  const JobResult with = run_job(n(), cases, 4, config_with(4096));
  const JobResult without = run_job(n(), cases, 4, config_with(0));
  expect_same_results(cases, with, without);
  for (int r = 0; r < n(); ++r) {
    EXPECT_GT(with.with_inputs[r], 0u) << "rank " << r;
    EXPECT_LT(with.with_inputs[r], with.collectives[r]) << "rank " << r;
  }
}

// A rank that sends no inputs (HVDC_ROUND_INPUT_BYTES=0 there) makes every member exchange: the
// members decide from the same round messages.
TEST_P(RoundInputsTest, OneRankWithoutInputsMakesEveryRankExchange) {
  const std::vector<Case> cases = every_dtype_and_op();
  const int quiet = n() - 1;
  const JobResult mixed =
      run_job(n(), cases, 3, config_with(64 << 10), [&](int rank, EngineConfig* config) {
        if (rank == quiet) config->round_input_bytes = 0;
      });
  const JobResult without = run_job(n(), cases, 3, config_with(0));
  expect_same_results(cases, mixed, without);
  for (int r = 0; r < n(); ++r) EXPECT_EQ(mixed.with_inputs[r], 0u) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Ranks, RoundInputsTest, ::testing::Range(2, 6),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

}  // namespace
