// Negotiation (core/negotiation/negotiation.h) between two ranks of one thread over the fake
// transport: through the coordinator first, through the response cache after that, and the
// failure of a garbled round message.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/negotiation/negotiation.h"
#include "fake_transport.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::core::Negotiation;
using hvdc::core::OpState;
using hvdc::core::Response;
using hvdc::core::SetState;
using hvdc::core::TensorEntry;

// One rank's engine state around its Negotiation.
struct Rank {
  Rank(std::shared_ptr<hvdc_test::FakeNetwork> net, int rank, int size, size_t cache)
      : transport(net, rank), tracer(false) {
    hvdc::core::ProcessSetInfo global;
    global.ranks = {0, 1};
    global.index = rank;
    auto set = std::make_unique<SetState>(global, cache);
    if (rank == 0) set->controller = std::make_unique<hvdc::core::Controller>(size);
    sets[0] = std::move(set);
    hvdc::core::NegotiationConfig config;
    config.rank = rank;
    config.size = size;
    hvdc::core::NegotiationContext context;
    context.transport = &transport;
    context.sets = &sets;
    context.queue = &queue;
    context.stats = &stats;
    context.tracer = &tracer;
    context.fail = [this](const Status& st) {
      if (terminated.is_ok()) terminated = st;
    };
    context.terminated = &terminated;
    negotiation = std::make_unique<Negotiation>(config, std::move(context));
  }

  void submit(const std::string& name, int64_t count) {
    TensorEntry entry;
    entry.request.name = name;
    entry.request.dtype = HVD_FLOAT32;
    entry.request.shape = {count};
    entry.state = std::make_shared<OpState>(nullptr, nullptr);
    ASSERT_TRUE(queue.push(std::move(entry)).is_ok());
  }

  // The engine's negotiation steps (engine.cc step()).
  void step() {
    negotiation->report_local_requests();
    const auto now = std::chrono::steady_clock::now();
    negotiation->coordinate(now);
    negotiation->progress_rounds(&agreed, now);
  }

  std::vector<std::string> agreed_names() const {
    std::vector<std::string> out;
    for (const Response& r : agreed) out.insert(out.end(), r.names.begin(), r.names.end());
    return out;
  }

  hvdc_test::FakeTransport transport;
  std::map<int32_t, std::unique_ptr<SetState>> sets;
  hvdc::core::TensorQueue queue;
  hvdc::core::EngineStats stats;
  hvdc::core::Tracer tracer;
  Status terminated;
  std::unique_ptr<Negotiation> negotiation;
  std::deque<Response> agreed;
};

struct Pair {
  explicit Pair(size_t cache = 16) : net(std::make_shared<hvdc_test::FakeNetwork>(2)) {
    ranks.push_back(std::make_unique<Rank>(net, 0, 2, cache));
    ranks.push_back(std::make_unique<Rank>(net, 1, 2, cache));
  }
  void steps(int n) {
    for (int i = 0; i < n; ++i) {
      for (auto& r : ranks) r->step();
    }
  }
  std::shared_ptr<hvdc_test::FakeNetwork> net;
  std::vector<std::unique_ptr<Rank>> ranks;
};

TEST(Negotiation, ATensorSubmittedEverywhereIsAgreedInTheSameOrderEverywhere) {
  Pair pair;
  pair.ranks[0]->submit("b", 4);
  pair.ranks[0]->submit("a", 4);
  pair.ranks[1]->submit("a", 4);
  pair.steps(5);
  for (auto& r : pair.ranks) {  // "b" waits for rank 1; "a" is ready on both
    EXPECT_EQ(r->agreed_names(), (std::vector<std::string>{"a"}));
  }
  pair.ranks[1]->submit("b", 4);
  pair.steps(5);
  for (auto& r : pair.ranks) {
    EXPECT_TRUE(r->terminated.is_ok()) << r->terminated.message();
    EXPECT_EQ(r->agreed_names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(r->stats.cache_hits.load(), 0u);
  }
  EXPECT_EQ(pair.ranks[1]->stats.coordinator_requests.load(), 2u);
}

// The second time round, the cache settles the tensor without the coordinator.
TEST(Negotiation, ARepeatedTensorIsAgreedThroughTheCache) {
  Pair pair;
  for (int step = 0; step < 2; ++step) {
    for (auto& r : pair.ranks) {
      r->submit("grad", 8);
      r->agreed.clear();
    }
    pair.steps(6);
    for (auto& r : pair.ranks) {
      ASSERT_EQ(r->agreed_names(), (std::vector<std::string>{"grad"})) << "step " << step;
      TensorEntry done;
      ASSERT_TRUE(r->queue.take(0, "grad", &done));  // executed
    }
  }
  for (auto& r : pair.ranks) EXPECT_EQ(r->stats.cache_hits.load(), 1u);
  EXPECT_EQ(pair.ranks[1]->stats.coordinator_requests.load(), 1u);
}

// A loop over more tensors than the cache holds (20 in turn, 16 kept) settles all but five of
// them through the cache from the second pass on, the same entries kept on both ranks.
TEST(Negotiation, ALoopPastTheCacheCapacityKeepsMostOfItCached) {
  Pair pair(16);
  uint64_t hits_before = 0, requests_before = 0;
  for (int pass = 0; pass < 3; ++pass) {
    hits_before = pair.ranks[1]->stats.cache_hits.load();
    requests_before = pair.ranks[1]->stats.coordinator_requests.load();
    for (int t = 0; t < 20; ++t) {
      const std::string name = "grad." + std::to_string(t);
      for (auto& r : pair.ranks) {
        r->submit(name, 8);
        r->agreed.clear();
      }
      pair.steps(6);
      for (auto& r : pair.ranks) {
        ASSERT_TRUE(r->terminated.is_ok()) << r->terminated.message();
        ASSERT_EQ(r->agreed_names(), (std::vector<std::string>{name})) << "pass " << pass;
        TensorEntry done;
        ASSERT_TRUE(r->queue.take(0, name, &done));
      }
    }
  }
  for (auto& r : pair.ranks) EXPECT_EQ(r->stats.cache_hits.load() - hits_before, 15u);
  EXPECT_EQ(pair.ranks[1]->stats.coordinator_requests.load() - requests_before, 5u);
}

TEST(Negotiation, AGarbledRoundMessageEndsTheWork) {
  Pair pair;
  pair.net->inbox[1].push_back(
      {hvdc::transport::make_tag(hvdc::transport::TagKind::kRound, 0, 1), "garbage"});
  pair.ranks[1]->step();
  EXPECT_FALSE(pair.ranks[1]->terminated.is_ok());
  EXPECT_NE(pair.ranks[1]->terminated.message().find("round message from rank 0"),
            std::string::npos)
      << pair.ranks[1]->terminated.message();
}

// hvd_join: the joined rank agrees to cached allreduces it never submitted.
TEST(Negotiation, JoinIsReportedUntilItCompletes) {
  Pair pair;
  EXPECT_FALSE(pair.ranks[1]->negotiation->joined());
  TensorEntry join;
  join.request.name = hvdc::core::kJoinName;
  join.request.op_type = hvdc::core::OpType::kJoin;
  join.state = std::make_shared<OpState>(nullptr, nullptr);
  ASSERT_TRUE(pair.ranks[1]->queue.push(std::move(join)).is_ok());
  pair.ranks[1]->step();
  EXPECT_TRUE(pair.ranks[1]->negotiation->joined());
  pair.ranks[1]->negotiation->join_completed();
  EXPECT_FALSE(pair.ranks[1]->negotiation->joined());
}

}  // namespace
