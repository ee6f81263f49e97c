#include "activation.h"

#include <stdexcept>

namespace trainer {

Tensor ReLU::forward(const Tensor& input, const ForwardContext&) {
  input_ = input;
  Tensor output = input;
  for (size_t i = 0; i < output.size(); ++i) output[i] = output[i] > 0.0f ? output[i] : 0.0f;
  return output;
}

Tensor ReLU::backward(const Tensor& grad_output) {
  Tensor grad_input = grad_output;
  for (size_t i = 0; i < grad_input.size(); ++i) {
    if (!(input_[i] > 0.0f)) grad_input[i] = 0.0f;
  }
  return grad_input;
}

Dropout::Dropout(std::string name, double rate) : name_(std::move(name)), rate_(rate) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw std::invalid_argument(name_ + ": dropout rate must be in [0, 1), got " +
                                std::to_string(rate));
  }
}

Tensor Dropout::forward(const Tensor& input, const ForwardContext& context) {
  mask_ = Tensor(input.shape(), 1.0f);
  if (context.training && rate_ > 0.0) {
    if (context.rng == nullptr) throw std::invalid_argument(name_ + ": training needs an rng");
    std::bernoulli_distribution keep(1.0 - rate_);
    const float scale = static_cast<float>(1.0 / (1.0 - rate_));
    for (size_t i = 0; i < mask_.size(); ++i) mask_[i] = keep(*context.rng) ? scale : 0.0f;
  }
  Tensor output = input;
  for (size_t i = 0; i < output.size(); ++i) output[i] *= mask_[i];
  return output;
}

Tensor Dropout::backward(const Tensor& grad_output) {
  Tensor grad_input = grad_output;
  for (size_t i = 0; i < grad_input.size(); ++i) grad_input[i] *= mask_[i];
  return grad_input;
}

Tensor Flatten::forward(const Tensor& input, const ForwardContext&) {
  if (input.ndim() < 1) throw std::invalid_argument(name_ + ": input has no batch dimension");
  input_shape_ = input.shape();
  Tensor output = input;
  const int64_t batch = input.dim(0);
  output.reshape({batch, batch == 0 ? 0 : static_cast<int64_t>(input.size()) / batch});
  return output;
}

Tensor Flatten::backward(const Tensor& grad_output) {
  Tensor grad_input = grad_output;
  grad_input.reshape(input_shape_);
  return grad_input;
}

}  // namespace trainer
