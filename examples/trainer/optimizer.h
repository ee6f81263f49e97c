// Optimizers: SGD with momentum, and Adam. Each keeps its per-parameter state in Tensors listed
// by state(), in a fixed order, so a checkpoint can save it and a resume can broadcast it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "parameter.h"

namespace trainer {

class Optimizer {
 public:
  explicit Optimizer(double learning_rate) : learning_rate_(learning_rate) {}
  virtual ~Optimizer() = default;

  // Updates params.in_order()[index] from its gradient multiplied by rescale. step is the
  // 1-based number of the current training step (Adam's bias correction needs it).
  virtual void update(size_t index, Parameter& parameter, float rescale, int64_t step) = 0;
  virtual std::vector<Tensor*> state() = 0;
  virtual std::string name() const = 0;

  double learning_rate() const { return learning_rate_; }

 protected:
  double learning_rate_;
};

// v = momentum * v + g;  w -= lr * v.
class SGD : public Optimizer {
 public:
  SGD(const ParameterDict& params, double learning_rate, double momentum);
  void update(size_t index, Parameter& parameter, float rescale, int64_t step) override;
  std::vector<Tensor*> state() override;
  std::string name() const override { return "sgd"; }

 private:
  double momentum_;
  std::vector<Tensor> velocity_;
};

// Kingma and Ba's Adam with bias correction.
class Adam : public Optimizer {
 public:
  Adam(const ParameterDict& params, double learning_rate, double beta1 = 0.9, double beta2 = 0.999,
       double epsilon = 1e-8);
  void update(size_t index, Parameter& parameter, float rescale, int64_t step) override;
  std::vector<Tensor*> state() override;
  std::string name() const override { return "adam"; }

 private:
  double beta1_, beta2_, epsilon_;
  std::vector<Tensor> mean_, variance_;
};

// "sgd" (momentum 0.9) or "adam"; throws std::invalid_argument naming anything else.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const ParameterDict& params,
                                          double learning_rate);

}  // namespace trainer
