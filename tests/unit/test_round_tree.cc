// Rounds of agreement up and down a tree (core/negotiation/round_tree.h, tree_rounds.h): the
// tree's shape, its messages on the wire, and engines as threads that agree through it (forced
// at 2..8 ranks, by default at 65) on collectives and cache hits over overlapping process sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/message.h"
#include "core/negotiation/negotiation.h"
#include "core/negotiation/round_tree.h"
#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::EngineConfig;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc::core::RoundTree;
using hvdc::core::TreeEntry;
using hvdc::core::TreeKind;
using hvdc::core::TreeMessage;
using hvdc::transport::TagKind;
using hvdc_test::on_ranks;
using hvdc_test::ThreadEngines;

TEST(RoundTreeShape, ParentsAndChildrenInHeapOrder) {
  RoundTree root(0, 10, 3);
  EXPECT_TRUE(root.is_root());
  EXPECT_EQ(root.parent(), -1);
  EXPECT_EQ(root.children(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(root.subtree_of_child(0), (std::vector<int>{1, 4, 5, 6}));
  EXPECT_EQ(root.subtree_of_child(2), (std::vector<int>{3}));  // 10, 11, 12 are past the end
  RoundTree two(2, 10, 3);
  EXPECT_EQ(two.parent(), 0);
  EXPECT_EQ(two.children(), (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(RoundTree(9, 10, 3).parent(), 2);
  EXPECT_TRUE(RoundTree(9, 10, 3).children().empty());
  EXPECT_EQ(root.depth(), 2);
  RoundTree eight(1, 512, 8);
  EXPECT_EQ(eight.children(), (std::vector<int>{9, 10, 11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(eight.depth(), 3);  // 1 + 8 + 64 + 512 > 512 ranks
  EXPECT_EQ(RoundTree(0, 1, 8).depth(), 0);
  EXPECT_TRUE(RoundTree(0, 1, 8).children().empty());
}

// For every rank count and fanout: each rank but the root has one parent that lists it as a
// child, and the root's subtree is every rank exactly once.
TEST(RoundTreeShape, EveryRankOnceUnderTheRoot) {
  for (int k : {2, 3, 8, 16}) {
    for (int n : {1, 2, 7, 8, 9, 33, 100, 512}) {
      std::vector<int> all(n);
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(RoundTree(0, n, k).subtree(0), all) << "n " << n << " k " << k;
      size_t from_children = 1;
      RoundTree root(0, n, k);
      for (size_t i = 0; i < root.children().size(); ++i) {
        from_children += root.subtree_of_child(i).size();
      }
      EXPECT_EQ(from_children, static_cast<size_t>(n));
      for (int r = 1; r < n; ++r) {
        const std::vector<int> siblings = root.children_of(RoundTree(r, n, k).parent());
        EXPECT_NE(std::find(siblings.begin(), siblings.end(), r), siblings.end())
            << "n " << n << " k " << k << " rank " << r;
        EXPECT_LE(static_cast<int>(siblings.size()), k);
      }
    }
  }
}

TEST(TreeMessageWire, RoundTripsAndRejectsGarbage) {
  TreeMessage down{TreeKind::kDown, 42, 1, {TreeEntry{0, "zero"}, TreeEntry{1, ""}}};
  const std::string bytes = hvdc::core::encode(down);
  TreeMessage back;
  ASSERT_TRUE(hvdc::core::decode(bytes, &back).is_ok());
  EXPECT_EQ(back.kind, TreeKind::kDown);
  EXPECT_EQ(back.round, 42u);
  EXPECT_EQ(back.open_next, 1);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].bytes, "zero");
  EXPECT_EQ(back.entries[1].rank, 1);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    TreeMessage part;
    EXPECT_FALSE(hvdc::core::decode(bytes.substr(0, cut), &part).is_ok()) << cut;
  }
  std::string bad_kind = bytes;
  bad_kind[0] = 9;
  EXPECT_EQ(hvdc::core::decode(bad_kind, &back).code(), HVD_ERR_INTERNAL);
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {  // flipped bytes: an error or a message, never a crash
    std::string flipped = bytes;
    flipped[rng() % flipped.size()] ^= static_cast<char>(1 + rng() % 255);
    (void)hvdc::core::decode(flipped, &back);
  }
}

// Two overlapping sets besides the global one: the even ranks, and ranks 1 .. ceil(n / 2).
int32_t last_of_second_set(int n) {
  return std::max(1, (n + 1) / 2);
}

std::string overlapping_sets(int n) {
  std::string even, low;
  for (int r = 0; r < n; r += 2) even += (even.empty() ? "" : ",") + std::to_string(r);
  for (int r = 1; r <= last_of_second_set(n); ++r) {
    low += (low.empty() ? "" : ",") + std::to_string(r);
  }
  return even + ";" + low;
}

bool member(int n, int32_t set, int rank) {
  if (set == 0) return true;
  if (set == 1) return rank % 2 == 0;
  return rank >= 1 && rank <= last_of_second_set(n);
}

float sum_over(int n, int32_t set, size_t step) {
  float sum = 0;
  for (int q = 0; q < n; ++q) sum += member(n, set, q) ? static_cast<float>(q + 1 + step) : 0.f;
  return sum;
}

// The members' values of one step's allgather on `set`, in member order.
std::vector<int32_t> gathered(int n, int32_t set, int step) {
  std::vector<int32_t> out;
  for (int q = 0; q < n; ++q) {
    if (member(n, set, q)) out.push_back(q + 100 * step);
  }
  return out;
}

// One step's ops on rank r's sets: submitted in `sets` order, each an allreduce and an
// allgather; returns what differs from the reference.
Status run_step(ThreadEngines& job, int r, int step, const std::vector<int32_t>& sets) {
  const int n = job.size();
  std::vector<std::shared_ptr<hvdc::core::OpState>> reduced(sets.size()), gathers(sets.size());
  std::vector<std::vector<float>> in(sets.size()), out(sets.size());
  const int32_t mine = r + 100 * step;
  for (size_t k = 0; k < sets.size(); ++k) {
    in[k].assign(8, static_cast<float>(r + 1 + step));
    out[k].assign(8, -1.f);
    const std::string suffix = std::to_string(sets[k]);
    Request sum = hvdc_test::make_request("grad." + suffix, OpType::kAllreduce, HVD_FLOAT32, {8});
    sum.reduce_op = HVD_OP_SUM;
    sum.process_set = sets[k];
    HVDC_RETURN_IF_ERROR(hvdc_test::submit(
        job.engine(r), hvdc_test::make_entry(sum, in[k].data(), out[k].data()), &reduced[k]));
    Request gather = hvdc_test::make_request("ranks." + suffix, OpType::kAllgather, HVD_INT32, {1});
    gather.process_set = sets[k];
    HVDC_RETURN_IF_ERROR(hvdc_test::submit(
        job.engine(r), hvdc_test::make_entry(gather, &mine, nullptr), &gathers[k]));
  }
  for (size_t k = 0; k < sets.size(); ++k) {
    const std::string where = "set " + std::to_string(sets[k]) + " step " + std::to_string(step);
    HVDC_RETURN_IF_ERROR(hvdc_test::await(reduced[k]));
    if (out[k][7] != sum_over(n, sets[k], static_cast<size_t>(step))) {
      return Status(HVD_ERR_INTERNAL, where + ": sum " + std::to_string(out[k][7]));
    }
    HVDC_RETURN_IF_ERROR(hvdc_test::await(gathers[k]));
    hvd_tensor_t t;
    if (!gathers[k]->output(&t)) return Status(HVD_ERR_INTERNAL, where + ": no allgather output");
    const auto* data = static_cast<const int32_t*>(t.data);
    if (std::vector<int32_t>(data, data + t.shape[0]) != gathered(n, sets[k], step)) {
      return Status(HVD_ERR_INTERNAL, where + ": wrong allgather");
    }
  }
  return Status::ok();
}

// Every rank submits, per step, an allreduce and an allgather on each of its sets, in an order
// that differs per rank; names repeat across steps, so steps after the first are cache hits.
Status run_steps(ThreadEngines& job, int r, int steps) {
  for (int step = 0; step < steps; ++step) {
    std::vector<int32_t> sets;
    for (int32_t set : {0, 1, 2}) {
      if (member(job.size(), set, r)) sets.push_back(set);
    }
    std::rotate(sets.begin(), sets.begin() + (r + step) % sets.size(), sets.end());
    HVDC_RETURN_IF_ERROR(run_step(job, r, step, sets));
  }
  return Status::ok();
}

// Runs the steps on every rank and checks that the rounds went through the tree only.
void expect_agreement_by_tree(int n, int round_tree_min_ranks, int steps) {
  EngineConfig config;
  config.hostname = "round-tree";
  config.process_sets = overlapping_sets(n);
  // Agreement by round only: a lane op skips the round, and the first op of each set of up to 64
  // members would open its board, in place, which with 65 ranks in threads of one process costs
  // more than the three steps (three times as long here; with every small op in place, past the
  // test's 20 s limit under TSan).
  config.lane = false;
  if (round_tree_min_ranks > 0) config.round_tree_min_ranks = round_tree_min_ranks;
  std::unique_ptr<ThreadEngines> job;
  Status st = ThreadEngines::start(n, config, &job);
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::vector<Status> status(n);
  on_ranks(n, [&](int r) { status[r] = run_steps(*job, r, steps); });
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(status[r].is_ok()) << "rank " << r << ": " << status[r].message();
  EXPECT_EQ(job->fabric().counts().of(TagKind::kRound), 0u);
  EXPECT_GT(job->fabric().counts().of(TagKind::kTreeRound), 0u);
  EXPECT_GT(job->engine(n - 1).stats().cache_hits.load(), 0u);
  for (const Status& s : job->shutdown()) EXPECT_TRUE(s.is_ok()) << s.message();
}

class RoundTreeForced : public ::testing::TestWithParam<int> {};

TEST_P(RoundTreeForced, OverlappingSetsAgreeThroughTheTree) {
  expect_agreement_by_tree(GetParam(), 2, 4);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RoundTreeForced, ::testing::Range(2, 9),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

// Above the default crossover the tree is on without any setting.
TEST(RoundTreeDefault, SixtyFiveRanksAgreeThroughTheTree) {
  ASSERT_LT(hvdc::core::kDefaultRoundTreeMinRanks, 65);
  expect_agreement_by_tree(65, 0, 3);
}

// One rank of 10 goes silent (its messages dropped: a stopped process). With fanout 8 rank 9's
// parent is rank 1, whose parent is the root. A silent leaf (9): rank 1 waits for it and rank 0
// for rank 1, and every survivor must name 9 only, not the live rank 1 between it and the
// root. A silent inner node (1): its child 9 is alive and must not be named. A silent root (0):
// the ranks that asked it for a round name it.
class RoundTreeFaults : public ::testing::TestWithParam<int> {};

TEST_P(RoundTreeFaults, SilentRankIsNamedOnEverySurvivor) {
  constexpr int kRanks = 10;
  const int kSilent = GetParam();
  EngineConfig config;
  config.hostname = "round-tree-faults";
  config.timeout_seconds = 1;
  config.stall_check_seconds = 0;
  config.round_tree_min_ranks = 2;
  std::unique_ptr<ThreadEngines> job;
  ASSERT_TRUE(ThreadEngines::start(kRanks, config, &job).is_ok());
  ASSERT_EQ(RoundTree(9, kRanks, hvdc::core::kRoundTreeFanout).parent(), 1);
  job->fabric().drop_from(kSilent);
  std::vector<Status> status(kRanks);
  const auto begin = std::chrono::steady_clock::now();
  on_ranks(kRanks, [&](int r) {
    if (r == kSilent) return;
    Request req = hvdc_test::make_request("unanswered", OpType::kBarrier, HVD_UINT8, {});
    status[r] = hvdc_test::run(job->engine(r), hvdc_test::make_entry(req, nullptr, nullptr));
  });
  // HVDC_TIMEOUT 1 s: the round waits 1 s, probes, and names after 1.5 s.
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(8));
  for (int r = 0; r < kRanks; ++r) {
    if (r == kSilent) continue;
    EXPECT_EQ(status[r].code(), HVD_ERR_TIMEOUT) << "rank " << r << ": " << status[r].message();
    const std::string named = "rank(s) " + std::to_string(kSilent) + " did not answer";
    EXPECT_NE(status[r].message().find(named), std::string::npos)
        << "rank " << r << ": " << status[r].message();
  }
  EXPECT_GT(job->fabric().counts().of(TagKind::kTreeRound), 0u);
  // The silent rank still hears the survivors: their failure notice reaches it too (and its
  // shutdown then skips the barrier the others skip).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (job->engine(kSilent).async_error().is_ok() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(job->engine(kSilent).async_error().code(), HVD_ERR_TIMEOUT);
  job->shutdown();
}

INSTANTIATE_TEST_SUITE_P(Silent, RoundTreeFaults, ::testing::Values(9, 1, 0),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "rank" + std::to_string(info.param);
                         });

}  // namespace
