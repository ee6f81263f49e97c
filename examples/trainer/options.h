// The command line of hvdc-train.
#pragma once

#include <cstdint>
#include <string>

#include "partition.h"

namespace trainer {

struct Options {
  std::string data = "synthetic";  // synthetic | digits | idx:DIR
  std::string model = "mlp";       // mlp | cnn
  int64_t epochs = 20;
  int64_t batch_size = 32;  // per rank
  double lr = 0.0;          // 0: the optimizer's default (sgd 0.05, adam 0.002)
  bool lr_scaling = true;   // multiply lr by the number of ranks (the global batch grows with it)
  std::string optimizer = "sgd";
  Partition partition = Partition::kShard;
  std::string checkpoint;  // written by rank 0 after every epoch when set
  bool resume = false;     // start from the checkpoint
  uint64_t seed = 42;
  int64_t fusion_threshold = -1;  // bytes; -1 keeps hvdc's setting (HVDC_FUSION_THRESHOLD)
  double dropout = 0.1;
  int64_t synthetic_train = 1024, synthetic_test = 256;
  // Test hooks.
  bool verify_sync = false;   // checksum allreduce of the parameters after every epoch
  int fail_rank = -1;         // this rank exits with status 3 ...
  int64_t fail_at_step = -1;  // ... when it is about to run this global step (1-based)
  bool help = false;
};

// Throws std::invalid_argument with a message naming the option and the value.
Options parse_options(int argc, char** argv);
const char* usage_text();

}  // namespace trainer
