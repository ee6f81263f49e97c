#include "optimizer.h"

#include <cmath>
#include <stdexcept>

namespace trainer {

namespace {

std::vector<Tensor> zeros_like(const ParameterDict& params) {
  std::vector<Tensor> zeros;
  for (const Parameter* parameter : params.in_order()) zeros.emplace_back(parameter->data.shape());
  return zeros;
}

}  // namespace

SGD::SGD(const ParameterDict& params, double learning_rate, double momentum)
    : Optimizer(learning_rate), momentum_(momentum), velocity_(zeros_like(params)) {}

void SGD::update(size_t index, Parameter& parameter, float rescale, int64_t) {
  Tensor& velocity = velocity_.at(index);
  const float lr = static_cast<float>(learning_rate_), momentum = static_cast<float>(momentum_);
  for (size_t i = 0; i < velocity.size(); ++i) {
    velocity[i] = momentum * velocity[i] + rescale * parameter.grad[i];
    parameter.data[i] -= lr * velocity[i];
  }
}

std::vector<Tensor*> SGD::state() {
  std::vector<Tensor*> state;
  for (Tensor& velocity : velocity_) state.push_back(&velocity);
  return state;
}

Adam::Adam(const ParameterDict& params, double learning_rate, double beta1, double beta2,
           double epsilon)
    : Optimizer(learning_rate),
      beta1_(beta1),
      beta2_(beta2),
      epsilon_(epsilon),
      mean_(zeros_like(params)),
      variance_(zeros_like(params)) {}

void Adam::update(size_t index, Parameter& parameter, float rescale, int64_t step) {
  Tensor& mean = mean_.at(index);
  Tensor& variance = variance_.at(index);
  const double t = static_cast<double>(step);
  // The bias-corrected step size folds both corrections into one factor.
  const float step_size = static_cast<float>(learning_rate_ * std::sqrt(1.0 - std::pow(beta2_, t)) /
                                             (1.0 - std::pow(beta1_, t)));
  const float b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_);
  const float eps = static_cast<float>(epsilon_);
  for (size_t i = 0; i < mean.size(); ++i) {
    const float g = rescale * parameter.grad[i];
    mean[i] = b1 * mean[i] + (1.0f - b1) * g;
    variance[i] = b2 * variance[i] + (1.0f - b2) * g * g;
    parameter.data[i] -= step_size * mean[i] / (std::sqrt(variance[i]) + eps);
  }
}

std::vector<Tensor*> Adam::state() {
  std::vector<Tensor*> state;
  for (Tensor& mean : mean_) state.push_back(&mean);
  for (Tensor& variance : variance_) state.push_back(&variance);
  return state;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const ParameterDict& params,
                                          double learning_rate) {
  if (name == "sgd") return std::make_unique<SGD>(params, learning_rate, 0.9);
  if (name == "adam") return std::make_unique<Adam>(params, learning_rate);
  throw std::invalid_argument("--optimizer: expected sgd or adam, got '" + name + "'");
}

}  // namespace trainer
