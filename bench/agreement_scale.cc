// Scale of agreement: control messages and time per negotiation round at many ranks, with
// engines as threads of this process on the loopback transport (no UCX, no launcher).
//
//   hvdc_agreement_scale [--ranks 8,32,128,512] [--ops N] [--tree-from N]
//
// Each rank runs `ops` barriers of one name, waiting for each: a barrier moves no data, so what
// is measured is agreement alone. The first barrier is negotiated through the coordinator; the
// others are cache hits, agreed in a round. Message counts are exact (the fabric counts every
// message by tag kind); times on a machine with fewer cores than ranks are only indicative.
// --tree-from sets HVDC_ROUND_TREE_MIN_RANKS (2: always the tree; a large value: always the
// all-to-all); by default the engine's own crossover decides.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "thread_engines.h"

namespace {

using hvdc::common::Status;
using hvdc::core::OpType;
using hvdc::transport::TagKind;
using hvdc_test::ThreadEngines;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> ranks = {8, 32, 128, 512};
  int ops = 0;        // 0: scaled by the rank count
  int tree_from = 0;  // HVDC_ROUND_TREE_MIN_RANKS; 0: the default
};

bool parse(int argc, char** argv, Options* out) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", arg.c_str());
      return false;
    }
    const std::string value = argv[++i];
    if (arg == "--ranks") {
      out->ranks.clear();
      for (size_t pos = 0; pos <= value.size();) {
        size_t comma = value.find(',', pos);
        if (comma == std::string::npos) comma = value.size();
        const int n = std::atoi(value.substr(pos, comma - pos).c_str());
        if (n < 2) {
          std::fprintf(stderr, "--ranks: '%s' is not a rank count >= 2\n", value.c_str());
          return false;
        }
        out->ranks.push_back(n);
        pos = comma + 1;
      }
    } else if (arg == "--ops") {
      out->ops = std::atoi(value.c_str());
      if (out->ops < 2) {
        std::fprintf(stderr, "--ops: '%s' is not a count >= 2\n", value.c_str());
        return false;
      }
    } else if (arg == "--tree-from") {
      out->tree_from = std::atoi(value.c_str());
      if (out->tree_from < 2) {
        std::fprintf(stderr, "--tree-from: '%s' is not a rank count >= 2\n", value.c_str());
        return false;
      }
    } else {
      std::fprintf(stderr, "unknown option %s (options: --ranks LIST, --ops N, --tree-from N)\n",
                   arg.c_str());
      return false;
    }
  }
  return true;
}

// Every rank runs `ops` barriers named `name` on a thread of its own, one after the other; false
// if any failed. *seconds: from the moment every thread was ready until the last finished.
bool barriers_everywhere(ThreadEngines& job, const std::string& name, int ops, double* seconds) {
  const int n = job.size();
  std::vector<Status> status(n);
  std::mutex mutex;
  std::condition_variable cv;
  int ready = 0;
  Clock::time_point begin;
  hvdc_test::on_ranks(n, [&](int r) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (++ready == n) {
        begin = Clock::now();
        cv.notify_all();
      }
      cv.wait(lock, [&] { return ready == n; });
    }
    for (int k = 0; k < ops && status[r].is_ok(); ++k) {
      auto req = hvdc_test::make_request(name, OpType::kBarrier, HVD_UINT8, {});
      hvdc::core::TensorEntry entry = hvdc_test::make_entry(req, nullptr, nullptr);
      std::shared_ptr<hvdc::core::OpState> state = entry.state;
      status[r] = job.engine(r).enqueue(std::move(entry));
      if (status[r].is_ok()) status[r] = state->wait(0);  // blocks: n pollers would skew time
    }
  });
  *seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  for (int r = 0; r < n; ++r) {
    if (!status[r].is_ok()) {
      std::fprintf(stderr, "rank %d: %s\n", r, status[r].message().c_str());
      return false;
    }
  }
  return true;
}

struct Row {
  int ranks = 0;
  int ops = 0;
  double rounds_per_op = 0;
  double round_msgs_per_round = 0;
  double coordinator_msgs_first = 0;  // request lists of the uncached first barrier
  double ms_per_op = 0;
  double ms_per_round = 0;
  bool tree = false;
};

bool measure(int n, int ops, int tree_from, Row* row) {
  hvdc::core::EngineConfig config;
  config.hostname = "agreement-scale";
  if (tree_from > 0) config.round_tree_min_ranks = tree_from;
  std::unique_ptr<ThreadEngines> job;
  Status st = ThreadEngines::start(n, config, &job);
  if (!st.is_ok()) {
    std::fprintf(stderr, "%d ranks: %s\n", n, st.message().c_str());
    return false;
  }
  auto& fabric = job->fabric();
  fabric.reset_counters();
  double seconds = 0;
  if (!barriers_everywhere(*job, "scale", 1, &seconds)) return false;  // negotiated, then cached
  row->coordinator_msgs_first = static_cast<double>(fabric.counts().of(TagKind::kRequestList));
  const uint64_t rounds_before = job->engine(0).stats().rounds.load();
  fabric.reset_counters();
  if (!barriers_everywhere(*job, "scale", ops - 1, &seconds)) return false;
  const double rounds = static_cast<double>(job->engine(0).stats().rounds.load() - rounds_before);
  const double warm_ops = ops - 1;
  row->ranks = n;
  row->ops = ops;
  row->rounds_per_op = rounds / warm_ops;
  // All-to-all rounds or tree rounds: one of the two kinds is 0.
  const auto counts = fabric.counts();
  row->round_msgs_per_round =
      static_cast<double>(counts.of(TagKind::kRound) + counts.of(TagKind::kTreeRound)) / rounds;
  row->tree = counts.of(TagKind::kTreeRound) > 0;
  row->ms_per_op = seconds * 1e3 / warm_ops;
  row->ms_per_round = seconds * 1e3 / rounds;
  for (const Status& s : job->shutdown()) {
    if (!s.is_ok()) std::fprintf(stderr, "shutdown: %s\n", s.message().c_str());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, &options)) return 2;
  std::printf("# agreement scale: barriers (cache hits after the first), loopback transport\n");
  std::printf("%6s %5s %10s %14s %12s %14s %12s %13s %s\n", "ranks", "ops", "rounds/op",
              "round msgs/rd", "per rank", "first: reqlist", "ms/op", "ms/round", "rounds");
  for (int n : options.ranks) {
    const int ops = options.ops > 0 ? options.ops : std::max(4, 4096 / n);
    Row row;
    if (!measure(n, ops, options.tree_from, &row)) return 1;
    std::printf("%6d %5d %10.2f %14.0f %12.1f %14.0f %12.3f %13.3f %s\n", row.ranks, row.ops,
                row.rounds_per_op, row.round_msgs_per_round, row.round_msgs_per_round / row.ranks,
                row.coordinator_msgs_first, row.ms_per_op, row.ms_per_round,
                row.tree ? "tree" : "all-to-all");
    std::fflush(stdout);
  }
  return 0;
}
