// Which samples each rank reads in an epoch: Horovod's two ways of splitting data between ranks.
//
// - Shard: every epoch, one permutation of the whole set (the same on every rank, seeded by the
//   epoch) is dealt out like cards: rank r takes positions r, r + size, r + 2 size, ... So the
//   ranks' batches at step t together are exactly the batch a single process with size times the
//   batch size would read at step t. Shards differ by one sample when size does not divide the
//   set, and then ranks may run different numbers of steps (see training_loop.cc on join).
// - Random: each rank draws its batches at random from the whole set, with its own generator;
//   every rank runs ceil(count / (batch * size)) steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

enum class Partition { kShard, kRandom };

// "shard" or "random"; throws std::invalid_argument naming anything else.
Partition parse_partition(const std::string& text);

struct EpochPlan {
  std::vector<std::vector<int64_t>> batches;  // sample indices, batch by batch (last may be short)
};

EpochPlan plan_epoch(Partition partition, int64_t sample_count, int64_t batch_size, int rank,
                     int size, uint64_t seed, int64_t epoch);

}  // namespace trainer
