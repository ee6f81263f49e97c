// The training run: Horovod's workflow end to end, on the blocks, the DistributedTrainer and the
// data partitions. main.cc parses the options, loads the data and starts hvdc; this class does
// the rest.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>

#include "dataset.h"
#include "distributed_trainer.h"
#include "loss.h"
#include "model.h"
#include "options.h"

namespace trainer {

class TrainingRun {
 public:
  TrainingRun(const Options& options, DataSplit data, int rank, int size);
  // Trains every epoch, prints the report on rank 0 and ends with "final test accuracy: x".
  // Throws hvdc::Error when communication fails (a dead peer, an abort).
  void run();

 private:
  struct EpochTotals {
    double loss_sum = 0, correct = 0, samples = 0, seconds_waiting = 0, seconds = 0;
    int64_t steps = 0;
  };
  void start();
  EpochTotals train_epoch(int64_t epoch);
  void train_step(const std::vector<int64_t>& batch, std::mt19937_64& dropout_rng,
                  EpochTotals& totals);
  void finish_uneven_epoch(int64_t steps_this_epoch);
  double test_accuracy();
  void verify_sync(int64_t epoch);
  void report_epoch(int64_t epoch, EpochTotals totals, double test_accuracy);
  std::string model_tag() const { return options_.model + " " + options_.optimizer; }

  Options options_;
  DataSplit data_;
  int rank_, size_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<DistributedTrainer> trainer_;
  SoftmaxCrossEntropy loss_;
  int64_t first_epoch_ = 0;
};

// FNV-1a over the bytes of every parameter: equal digests mean bit-identical parameters.
uint64_t parameter_digest(const ParameterDict& params);

}  // namespace trainer
