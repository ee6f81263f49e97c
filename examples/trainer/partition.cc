#include "partition.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace trainer {

namespace {

// Independent streams per (seed, epoch, rank) without correlated seeds.
std::mt19937_64 stream(uint64_t seed, int64_t epoch, int64_t rank) {
  std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                         static_cast<uint32_t>(epoch), static_cast<uint32_t>(rank + 1)};
  return std::mt19937_64(sequence);
}

void cut_into_batches(const std::vector<int64_t>& samples, int64_t batch_size, EpochPlan& plan) {
  for (size_t start = 0; start < samples.size(); start += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(samples.size(), start + static_cast<size_t>(batch_size));
    plan.batches.emplace_back(samples.begin() + static_cast<std::ptrdiff_t>(start),
                              samples.begin() + static_cast<std::ptrdiff_t>(end));
  }
}

}  // namespace

Partition parse_partition(const std::string& text) {
  if (text == "shard") return Partition::kShard;
  if (text == "random") return Partition::kRandom;
  throw std::invalid_argument("--partition: expected shard or random, got '" + text + "'");
}

EpochPlan plan_epoch(Partition partition, int64_t sample_count, int64_t batch_size, int rank,
                     int size, uint64_t seed, int64_t epoch) {
  EpochPlan plan;
  if (partition == Partition::kShard) {
    std::vector<int64_t> order(static_cast<size_t>(sample_count));
    std::iota(order.begin(), order.end(), 0);
    // rank -1: the permutation is shared by every rank, unlike the per-rank streams.
    std::mt19937_64 shared = stream(seed, epoch, -1);
    std::shuffle(order.begin(), order.end(), shared);
    std::vector<int64_t> mine;
    for (int64_t i = rank; i < sample_count; i += size)
      mine.push_back(order[static_cast<size_t>(i)]);
    cut_into_batches(mine, batch_size, plan);
    return plan;
  }
  const int64_t global_batch = batch_size * size;
  const int64_t steps = (sample_count + global_batch - 1) / global_batch;
  std::mt19937_64 own = stream(seed, epoch, rank);
  std::uniform_int_distribution<int64_t> pick(0, sample_count - 1);
  std::vector<int64_t> draws(static_cast<size_t>(steps * batch_size));
  for (int64_t& sample : draws) sample = pick(own);
  cut_into_batches(draws, batch_size, plan);
  return plan;
}

}  // namespace trainer
