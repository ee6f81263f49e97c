#include "training_loop.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <hvdc.hpp>
#include <stdexcept>

#include "broadcast.h"
#include "checkpoint.h"
#include "partition.h"
#include "progress.h"

namespace trainer {

namespace {

double default_learning_rate(const std::string& optimizer) {
  return optimizer == "adam" ? 0.002 : 0.05;
}

std::vector<int64_t> image_shape(const Dataset& set) {
  return {set.images.dim(1), set.images.dim(2), set.images.dim(3)};
}

// Sums values over every rank (metrics: each rank counts its own samples).
void sum_over_ranks(std::vector<double>& values, const std::string& name) {
  hvdc::Options options;
  options.name = name;
  hvdc::allreduce(values, hvdc::ReduceOp::Sum, options);
}

int64_t reduce_int(int64_t value, hvdc::ReduceOp op, const std::string& name) {
  std::vector<int64_t> values = {value};
  hvdc::Options options;
  options.name = name;
  hvdc::allreduce(values, op, options);
  return values[0];
}

// Under Open MPI every rank's stdout is a pseudo-terminal that orted forwards, whatever mpirun's
// own output is; only outside it does isatty say whether a person is watching.
bool stdout_is_terminal() {
  return isatty(STDOUT_FILENO) && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
}

}  // namespace

uint64_t parameter_digest(const ParameterDict& params) {
  uint64_t hash = 14695981039346656037ull;
  for (const Parameter* parameter : params.in_order()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(parameter->data.data());
    for (size_t i = 0; i < parameter->data.size() * sizeof(float); ++i) {
      hash = (hash ^ bytes[i]) * 1099511628211ull;
    }
  }
  return hash;
}

TrainingRun::TrainingRun(const Options& options, DataSplit data, int rank, int size)
    : options_(options), data_(std::move(data)), rank_(rank), size_(size) {}

void TrainingRun::start() {
  // Each rank initialises with its own seed, as independent framework processes would; the
  // broadcast below is what makes them start from the same parameters.
  model_ = build_model(options_.model, image_shape(data_.train), data_.train.classes,
                       options_.dropout, options_.seed + static_cast<uint64_t>(rank_));
  const double base_lr = options_.lr > 0 ? options_.lr : default_learning_rate(options_.optimizer);
  // The global batch is size times the per-rank batch: scale the step size with it.
  const double lr = options_.lr_scaling ? base_lr * size_ : base_lr;
  trainer_ = std::make_unique<DistributedTrainer>(
      model_->params, make_optimizer(options_.optimizer, model_->params, lr));
  trainer_->attach(model_->net);
  broadcast_parameters(model_->params, 0);
  if (options_.resume) {
    const TrainingState state = resume_checkpoint(options_.checkpoint, model_tag(), rank_,
                                                  model_->params, trainer_->optimizer());
    first_epoch_ = state.epochs_done;
    trainer_->set_steps_taken(state.steps_taken);
    options_.seed = state.seed;
  }
  if (rank_ == 0) {
    std::printf(
        "hvdc-train: %d rank(s), data %s, model %s (%zu parameters), optimizer %s, lr %g, "
        "batch %lld per rank, partition %s%s\n",
        size_, data_.description.c_str(), options_.model.c_str(), model_->params.total_elements(),
        options_.optimizer.c_str(), lr, static_cast<long long>(options_.batch_size),
        options_.partition == Partition::kShard ? "shard" : "random",
        options_.resume ? (", resumed after epoch " + std::to_string(first_epoch_)).c_str() : "");
    std::fflush(stdout);
  }
}

void TrainingRun::run() {
  start();
  double accuracy = 0.0;
  for (int64_t epoch = first_epoch_; epoch < options_.epochs; ++epoch) {
    const EpochTotals totals = train_epoch(epoch);
    accuracy = test_accuracy();
    report_epoch(epoch, totals, accuracy);
    if (options_.verify_sync) verify_sync(epoch);
    if (!options_.checkpoint.empty() && rank_ == 0) {
      save_checkpoint(options_.checkpoint, model_tag(),
                      TrainingState{epoch + 1, trainer_->steps_taken(), options_.seed},
                      model_->params, trainer_->optimizer());
    }
  }
  if (first_epoch_ >= options_.epochs) accuracy = test_accuracy();
  if (rank_ == 0) {
    std::printf("final test accuracy: %.4f\n", accuracy);
    std::printf("parameter digest: %016llx\n",
                static_cast<unsigned long long>(parameter_digest(model_->params)));
    std::fflush(stdout);
  }
}

TrainingRun::EpochTotals TrainingRun::train_epoch(int64_t epoch) {
  const auto start = std::chrono::steady_clock::now();
  const EpochPlan plan = plan_epoch(options_.partition, data_.train.count(), options_.batch_size,
                                    rank_, size_, options_.seed, epoch);
  // Dropout's generator is reseeded every epoch from (seed, epoch, rank): see checkpoint.h.
  std::seed_seq dropout_seed{static_cast<uint32_t>(options_.seed), static_cast<uint32_t>(epoch),
                             static_cast<uint32_t>(rank_), 0xD50Fu};
  std::mt19937_64 dropout_rng(dropout_seed);
  ProgressBar bar(rank_ == 0 && stdout_is_terminal(), epoch + 1, options_.epochs,
                  static_cast<int64_t>(plan.batches.size()));
  trainer_->reset_wait_clock();
  EpochTotals totals;
  for (const std::vector<int64_t>& batch : plan.batches) {
    train_step(batch, dropout_rng, totals);
    bar.advance(totals.loss_sum / totals.samples);
  }
  bar.clear();
  finish_uneven_epoch(totals.steps);
  totals.seconds_waiting = trainer_->seconds_waiting();
  totals.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return totals;
}

void TrainingRun::train_step(const std::vector<int64_t>& batch, std::mt19937_64& dropout_rng,
                             EpochTotals& totals) {
  const int64_t step = trainer_->steps_taken() + 1;
  if (rank_ == options_.fail_rank && step == options_.fail_at_step) {
    std::fprintf(stderr, "hvdc-train: rank %d: --fail-rank: exiting before step %lld on purpose\n",
                 rank_, static_cast<long long>(step));
    std::_Exit(3);  // no cleanup, no goodbye to the peers: as a crash would
  }
  Tensor images;
  std::vector<int32_t> labels;
  data_.train.gather(batch, images, labels);
  const Tensor logits = model_->net.forward(images, ForwardContext{true, &dropout_rng});
  const std::vector<float> losses = loss_.forward(logits, labels);
  // backward() hands each finished gradient to the DistributedTrainer, which starts its
  // allreduce at once; step() then waits for them and updates.
  model_->net.backward(loss_.backward());
  trainer_->step(options_.batch_size);
  const std::vector<int32_t> predicted = loss_.predictions();
  for (size_t i = 0; i < labels.size(); ++i) {
    totals.loss_sum += losses[i];
    totals.correct += predicted[i] == labels[i] ? 1 : 0;
  }
  totals.samples += static_cast<double>(labels.size());
  ++totals.steps;
}

// When shards differ in size, ranks run different numbers of steps. A rank that has run out
// calls join: it then adds zeros to the allreduces the others still submit, instead of leaving
// them waiting forever (in Horovod without join, the job deadlocks). The ranks that joined early
// missed the last updates, so the last rank to join, which took them all, broadcasts its state.
void TrainingRun::finish_uneven_epoch(int64_t steps_this_epoch) {
  const int32_t last_joined = hvdc::join();
  const int64_t fewest = reduce_int(steps_this_epoch, hvdc::ReduceOp::Min, "epoch.steps.min");
  const int64_t most = reduce_int(steps_this_epoch, hvdc::ReduceOp::Max, "epoch.steps.max");
  if (fewest == most) return;
  broadcast_parameters(model_->params, last_joined);
  broadcast_tensors(trainer_->optimizer().state(), last_joined, "optimizer.state");
  std::vector<int64_t> steps = {trainer_->steps_taken()};
  hvdc::Options options;
  options.name = "trainer.steps";
  hvdc::broadcast(steps, last_joined, options);
  trainer_->set_steps_taken(steps[0]);
  if (rank_ == 0) {
    std::printf(
        "uneven shards: ranks ran %lld to %lld steps; join ran, rank %d joined last and "
        "broadcast its parameters\n",
        static_cast<long long>(fewest), static_cast<long long>(most), last_joined);
  }
}

double TrainingRun::test_accuracy() {
  constexpr size_t kEvalBatch = 256;
  std::vector<int64_t> mine;  // every size-th test image, from this rank's offset
  for (int64_t i = rank_; i < data_.test.count(); i += size_) mine.push_back(i);
  std::vector<double> counts = {0.0, static_cast<double>(mine.size())};
  for (size_t start = 0; start < mine.size(); start += kEvalBatch) {
    const std::vector<int64_t> batch(
        mine.begin() + static_cast<std::ptrdiff_t>(start),
        mine.begin() + static_cast<std::ptrdiff_t>(std::min(mine.size(), start + kEvalBatch)));
    Tensor images;
    std::vector<int32_t> labels;
    data_.test.gather(batch, images, labels);
    loss_.forward(model_->net.forward(images, ForwardContext{}), labels);
    const std::vector<int32_t> predicted = loss_.predictions();
    for (size_t i = 0; i < labels.size(); ++i) counts[0] += predicted[i] == labels[i] ? 1 : 0;
  }
  sum_over_ranks(counts, "metrics.test");
  return counts[1] > 0 ? counts[0] / counts[1] : 0.0;
}

void TrainingRun::verify_sync(int64_t epoch) {
  const auto digest = static_cast<int64_t>(parameter_digest(model_->params));
  const int64_t lowest = reduce_int(digest, hvdc::ReduceOp::Min, "sync.digest.min");
  const int64_t highest = reduce_int(digest, hvdc::ReduceOp::Max, "sync.digest.max");
  if (lowest != highest) {
    throw std::runtime_error("--verify-sync: after epoch " + std::to_string(epoch + 1) +
                             " the parameters differ between ranks");
  }
  if (rank_ == 0) {
    std::printf(
        "sync check after epoch %lld: parameters bit-identical on all %d ranks (digest "
        "%016llx)\n",
        static_cast<long long>(epoch + 1), size_, static_cast<unsigned long long>(digest));
  }
}

void TrainingRun::report_epoch(int64_t epoch, EpochTotals totals, double test_accuracy) {
  std::vector<double> sums = {totals.loss_sum, totals.correct, totals.samples,
                              totals.seconds_waiting, totals.seconds};
  sum_over_ranks(sums, "metrics.train");
  if (rank_ != 0) return;
  // Images per second: all ranks' samples over this rank's wall time for the epoch.
  std::printf(
      "epoch %lld/%lld: loss %.4f, train accuracy %.4f, test accuracy %.4f, %.0f "
      "images/s, communication wait %.1f%% of step time\n",
      static_cast<long long>(epoch + 1), static_cast<long long>(options_.epochs), sums[0] / sums[2],
      sums[1] / sums[2], test_accuracy, sums[2] / totals.seconds, 100.0 * sums[3] / sums[4]);
  std::fflush(stdout);
}

}  // namespace trainer
