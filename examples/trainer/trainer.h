// Trainer, as in Gluon: applies an Optimizer to every parameter of a ParameterDict once per step.
// DistributedTrainer (distributed_trainer.h) adds gradient averaging across ranks.
#pragma once

#include <cstdint>
#include <memory>

#include "optimizer.h"
#include "parameter.h"

namespace trainer {

class Trainer {
 public:
  Trainer(ParameterDict& params, std::unique_ptr<Optimizer> optimizer)
      : params_(params), optimizer_(std::move(optimizer)) {}
  virtual ~Trainer() = default;

  // One update of every parameter. The gradients are sums over the batch (see loss.h), so they
  // are divided by batch_size here. Throws std::invalid_argument if batch_size < 1.
  virtual void step(int64_t batch_size);

  Optimizer& optimizer() { return *optimizer_; }
  ParameterDict& params() { return params_; }
  // Updates applied so far; a checkpoint saves it, and Adam's bias correction depends on it.
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }

 protected:
  void apply_updates(int64_t batch_size);

 private:
  ParameterDict& params_;
  std::unique_ptr<Optimizer> optimizer_;
  int64_t steps_ = 0;
};

}  // namespace trainer
