// hvdc-train: trains a small network data-parallel over hvdc. Start it with a launcher:
//   hvdcrun -np 2 build/examples/trainer/hvdc-train --data digits
// Every rank runs this same program; hvdc tells each which rank it is.
#include <cstdio>
#include <exception>
#include <hvdc.hpp>
#include <stdexcept>

#include "dataset.h"
#include "options.h"
#include "training_loop.h"

namespace {

trainer::DataSplit load_data(const trainer::Options& options) {
  if (options.data == "digits") return trainer::load_digits();
  if (options.data.rfind("idx:", 0) == 0)
    return trainer::load_idx_directory(options.data.substr(4));
  // A fixed seed: the data set does not change with --seed.
  return trainer::make_synthetic(7, options.synthetic_train, options.synthetic_test);
}

int train(const trainer::Options& options) {
  // Every rank reads its data first: a missing file fails every rank alike, before any rank
  // waits for the others.
  trainer::DataSplit data = load_data(options);
  hvdc::Config config;
  if (options.fusion_threshold >= 0) {
    config.set(hvdc::ConfigKey::FusionThreshold, options.fusion_threshold);
  }
  hvdc::Session session(config);
  // Horovod pins one device per process by local rank. The trainer computes on the CPU, so the
  // local rank only shows where each rank runs.
  const int rank = hvdc::rank(), size = hvdc::size();
  if (options.fail_rank >= size) {
    throw std::invalid_argument("--fail-rank: " + std::to_string(options.fail_rank) +
                                " is not a rank of this job of " + std::to_string(size));
  }
  try {
    trainer::TrainingRun(options, std::move(data), rank, size).run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hvdc-train: rank %d (local rank %d): %s\n", rank, hvdc::local_rank(),
                 error.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  trainer::Options options;
  try {
    options = trainer::parse_options(argc, argv);
  } catch (const std::invalid_argument& error) {
    std::fprintf(stderr, "hvdc-train: %s\n", error.what());
    return 2;
  }
  if (options.help) {
    std::fputs(trainer::usage_text(), stdout);
    return 0;
  }
  try {
    return train(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "hvdc-train: %s\n", error.what());
    return 1;
  }
}
