// The device backend (ops/nccl) over the host-memory runtime at 2..4 thread-ranks: every
// collective and reduce op, fusion with every dtype and the scale factors, the host path.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "device_ranks.h"
#include "device_values.h"
#include "kernel_reference.h"
#include "thread_engines.h"

namespace {

using device_test::close;
using device_test::get;
using device_test::reference;
using device_test::tensor;
using hvdc::common::Status;
using hvdc::ops::Collective;
using hvdc::ops::CollectiveArgs;
using hvdc::ops::TensorArgs;
using hvdc_test::DeviceRanks;
using hvdc_test::on_ranks;

constexpr uint32_t kHostPath = HVD_OP_HOST_PATH;

std::string label(int32_t dtype, int32_t op) {
  return std::string(hvdc::common::dtype_name(dtype)) + " " + hvdc::common::reduce_op_name(op);
}

// Rank r's allreduce of `counts` tensors (fused when several) over device copies of its data.
struct AllreduceCase {
  int32_t dtype = HVD_FLOAT32;
  int32_t op = HVD_OP_SUM;
  std::vector<size_t> counts{37};
  double pre = 1, post = 1;
  uint32_t flags = 0;
  int joined_rank = -1;  // contributes zeros, has no tensors
};

// Runs the case on every rank; checks every output against the reference.
void run_allreduce(DeviceRanks& d, const AllreduceCase& c) {
  const int n = d.size();
  const size_t esize = hvdc::common::dtype_size(c.dtype);
  std::vector<std::vector<void*>> outs(n);
  const std::vector<Status> status = d.run_all([&](int r) {
    CollectiveArgs op = d.args(r, Collective::kAllreduce, c.dtype);
    op.reduce_op = c.op;
    op.prescale = c.pre;
    op.postscale = c.post;
    op.flags = c.flags;
    for (size_t t = 0; t < c.counts.size(); ++t) {
      TensorArgs ta;
      ta.name = "t" + std::to_string(t);
      ta.count = static_cast<int64_t>(c.counts[t]);
      ta.shape = {ta.count};
      if (r != c.joined_rank) {
        auto data = tensor(c.dtype, r, c.counts[t], t * 5);
        ta.input = d.device_copy(r, data.data(), c.counts[t] * esize);
        ta.output =
            t % 2 == 0 ? const_cast<void*>(ta.input) : d.device_zeros(r, c.counts[t] * esize);
      }
      outs[r].push_back(ta.output);
      op.tensors.push_back(ta);
    }
    return op;
  });
  // A joined rank takes part with zeros (AVERAGE still divides by every rank).
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].is_ok())
        << label(c.dtype, c.op) << " rank " << r << ": " << status[r].message();
    if (r == c.joined_rank) continue;
    for (size_t t = 0; t < c.counts.size(); ++t) {
      for (size_t i = 0; i < c.counts[t]; ++i) {
        double want = reference(c.dtype, c.op, n, i, c.pre, c.post, t * 5);
        if (c.joined_rank >= 0) {  // recompute without the joined rank's values (zeros)
          double sum = 0;
          for (int q = 0; q < n; ++q) {
            if (q != c.joined_rank) sum += device_test::value(c.dtype, q, i + t * 5) * c.pre;
          }
          want = (c.op == HVD_OP_AVERAGE ? sum / n : sum) * c.post;
        }
        const double got = get(c.dtype, outs[r][t], i);
        ASSERT_TRUE(close(c.dtype, got, want, n))
            << label(c.dtype, c.op) << " n=" << n << " rank " << r << " tensor " << t << "[" << i
            << "]: got " << got << ", want " << want;
      }
    }
  }
}

class DeviceCollectives : public ::testing::TestWithParam<int> {};

TEST_P(DeviceCollectives, AllreduceEveryDtypeAndOp) {
  DeviceRanks d(GetParam());
  for (int32_t dtype : kernel_test::kAllDtypes) {
    for (int32_t op : kernel_test::kAllOps) {
      if (dtype == HVD_BOOL && op == HVD_OP_AVERAGE) continue;  // rejected by the API
      AllreduceCase c;
      c.dtype = dtype;
      c.op = op;
      run_allreduce(d, c);
      if (HasFatalFailure()) return;
    }
  }
  // NCCL reduced what it can; the rest (int16/uint16, bool, integer average) took the host path.
  EXPECT_GT(d.world().calls("allreduce"), 0);
}

TEST_P(DeviceCollectives, FusedAllreduceEveryDtypeWithScaleFactors) {
  DeviceRanks d(GetParam());
  for (int32_t dtype : kernel_test::kAllDtypes) {
    if (dtype == HVD_BOOL) continue;
    AllreduceCase c;
    c.dtype = dtype;
    c.op = hvdc::common::dtype_is_float(dtype) ? HVD_OP_AVERAGE : HVD_OP_SUM;
    c.counts = {5, 0, 130, 1, 64};
    c.pre = 2.0;
    c.post = hvdc::common::dtype_is_float(dtype) ? 0.25 : 3.0;
    const int copies = d.world().calls("batched_copy");
    run_allreduce(d, c);
    if (HasFatalFailure()) return;
    const bool on_nccl = dtype != HVD_INT16 && dtype != HVD_UINT16;
    if (on_nccl) {  // one batched copy in and one out per rank
      EXPECT_EQ(d.world().calls("batched_copy") - copies, 2 * d.size())
          << hvdc::common::dtype_name(dtype);
    }
  }
}

TEST_P(DeviceCollectives, JoinedRankContributesZeros) {
  DeviceRanks d(GetParam());
  AllreduceCase c;
  c.op = HVD_OP_AVERAGE;
  c.counts = {9, 4};
  c.joined_rank = d.size() - 1;
  run_allreduce(d, c);
}

TEST_P(DeviceCollectives, HostPathFlagReducesOnTheHost) {
  DeviceRanks d(GetParam());
  const int nccl_calls = d.world().calls("allreduce");
  for (uint32_t flags : {kHostPath}) {
    AllreduceCase c;
    c.flags = flags;
    c.counts = {33, 7};
    c.pre = 0.5;
    run_allreduce(d, c);
  }
  EXPECT_EQ(d.world().calls("allreduce"), nccl_calls);
  EXPECT_EQ(d.world().calls("comm_init_rank"), 0);  // no communicator for the host path
}

// Allgather with equal and with different first dimensions, plain and on the host path.
TEST_P(DeviceCollectives, Allgather) {
  const int n = GetParam();
  DeviceRanks d(n);
  for (bool even : {true, false}) {
    for (uint32_t flags : {0u, kHostPath}) {
      std::vector<int64_t> rows;
      for (int r = 0; r < n; ++r) rows.push_back(even ? 3 : r + 1);
      std::vector<std::vector<uint8_t>> outs(n);
      const std::vector<Status> status = d.run_all([&](int r) {
        CollectiveArgs op = d.args(r, Collective::kAllgather, HVD_FLOAT64);
        op.flags = flags;
        op.sizes = rows;
        TensorArgs t;
        t.name = "g";
        t.shape = {rows[r], 2};
        auto data = tensor(HVD_FLOAT64, r, rows[r] * 2);
        t.input = d.device_copy(r, data.data(), rows[r] * 16);
        t.allocate_output = [&, r](const std::vector<int64_t>& shape, size_t bytes) -> void* {
          outs[r].assign(bytes, 0);
          EXPECT_EQ(shape[1], 2);
          return outs[r].data();
        };
        op.tensors.push_back(t);
        return op;
      });
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].is_ok()) << status[r].message();
        size_t at = 0;
        for (int q = 0; q < n; ++q) {
          for (int64_t i = 0; i < rows[q] * 2; ++i, ++at) {
            ASSERT_EQ(get(HVD_FLOAT64, outs[r].data(), at), device_test::value(HVD_FLOAT64, q, i))
                << "even=" << even << " flags=" << flags << " rank " << r << " from " << q;
          }
        }
      }
    }
  }
}

TEST_P(DeviceCollectives, BroadcastFromEveryRoot) {
  const int n = GetParam();
  DeviceRanks d(n);
  for (int root = 0; root < n; ++root) {
    for (uint32_t flags : {0u, kHostPath}) {
      std::vector<void*> outs(n);
      const std::vector<Status> status = d.run_all([&](int r) {
        CollectiveArgs op = d.args(r, Collective::kBroadcast, HVD_BFLOAT16);
        op.root = root;
        op.flags = flags;
        TensorArgs t;
        t.name = "b";
        t.shape = {3, 5};
        auto data = tensor(HVD_BFLOAT16, r, 15);
        t.input = d.device_copy(r, data.data(), 30);
        t.output = d.device_zeros(r, 30);
        outs[r] = t.output;
        op.tensors.push_back(t);
        return op;
      });
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].is_ok()) << status[r].message();
        for (size_t i = 0; i < 15; ++i) {
          ASSERT_EQ(get(HVD_BFLOAT16, outs[r], i), device_test::value(HVD_BFLOAT16, root, i))
              << "root " << root << " rank " << r;
        }
      }
    }
  }
}

// Rank r sends (r + m) % 3 rows to member m; rows are tagged with sender and destination.
TEST_P(DeviceCollectives, AlltoallWithSplits) {
  const int n = GetParam();
  DeviceRanks d(n);
  auto rows_to = [](int from, int to) { return static_cast<int64_t>((from + to) % 3); };
  for (uint32_t flags : {0u, kHostPath}) {
    std::vector<std::vector<int32_t>> outs(n);
    std::vector<std::vector<int64_t>> received(n);
    const std::vector<Status> status = d.run_all([&](int r) {
      CollectiveArgs op = d.args(r, Collective::kAlltoall, HVD_INT32);
      op.flags = flags;
      TensorArgs t;
      t.name = "a";
      std::vector<int32_t> data;
      for (int m = 0; m < n; ++m) {
        t.splits.push_back(rows_to(r, m));
        for (int64_t k = 0; k < rows_to(r, m); ++k) data.push_back(r * 100 + m * 10 + k);
      }
      t.shape = {static_cast<int64_t>(data.size())};
      t.input = d.device_copy(r, data.data(), data.size() * 4);
      t.allocate_output = [&, r](const std::vector<int64_t>&, size_t bytes) -> void* {
        outs[r].assign(bytes / 4 + 1, -1);
        return outs[r].data();
      };
      t.set_received_splits = [&, r](std::vector<int64_t> rows) { received[r] = rows; };
      op.tensors.push_back(t);
      return op;
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(status[r].is_ok()) << status[r].message();
      size_t at = 0;
      for (int q = 0; q < n; ++q) {
        ASSERT_EQ(received[r][q], rows_to(q, r));
        for (int64_t k = 0; k < rows_to(q, r); ++k, ++at) {
          ASSERT_EQ(outs[r][at], q * 100 + r * 10 + k) << "flags " << flags;
        }
      }
    }
  }
}

// Rows split unevenly (the first rows % n ranks get one more), with both scale factors.
TEST_P(DeviceCollectives, ReducescatterEvenAndUneven) {
  const int n = GetParam();
  DeviceRanks d(n);
  for (int64_t rows : {int64_t{2} * n, int64_t{2} * n + 1}) {
    for (int32_t dtype : {HVD_FLOAT32, HVD_FLOAT16, HVD_INT32, HVD_INT16}) {
      const int32_t reduce = dtype == HVD_INT32 ? HVD_OP_AVERAGE : HVD_OP_SUM;
      const size_t esize = hvdc::common::dtype_size(dtype);
      const double post = hvdc::common::dtype_is_float(dtype) ? 0.5 : 1.0;
      std::vector<void*> outs(n);
      const std::vector<Status> status = d.run_all([&](int r) {
        CollectiveArgs op = d.args(r, Collective::kReducescatter, dtype);
        op.reduce_op = reduce;
        op.prescale = 2.0;
        op.postscale = post;
        TensorArgs t;
        t.name = "rs";
        t.shape = {rows, 3};
        auto data = tensor(dtype, r, rows * 3);
        t.input = d.device_copy(r, data.data(), rows * 3 * esize);
        t.output = d.device_zeros(r, 3 * esize * (rows / n + 1));
        outs[r] = t.output;
        op.tensors.push_back(t);
        return op;
      });
      int64_t first = 0;
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].is_ok()) << status[r].message();
        const int64_t mine = rows / n + (r < rows % n ? 1 : 0);
        for (int64_t i = 0; i < mine * 3; ++i) {
          const double want = reference(dtype, reduce, n, first * 3 + i, 2.0, post);
          const double got = get(dtype, outs[r], i);
          ASSERT_TRUE(close(dtype, got, want, n))
              << label(dtype, reduce) << " rows " << rows << " rank " << r << "[" << i << "]: got "
              << got << " want " << want;
        }
        first += mine;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceCollectives, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

}  // namespace
