#include "sequential.h"

namespace trainer {

Tensor Sequential::forward(const Tensor& input, const ForwardContext& context) {
  Tensor value = input;
  for (auto& block : blocks_) value = block->forward(value, context);
  return value;
}

Tensor Sequential::backward(const Tensor& grad_output) {
  Tensor grad = grad_output;
  for (auto block = blocks_.rbegin(); block != blocks_.rend(); ++block) {
    grad = (*block)->backward(grad);
    if (!hook_) continue;
    // A block's parameter gradients are final once its backward returns.
    for (Parameter* parameter : (*block)->parameters()) hook_(*parameter);
  }
  return grad;
}

std::vector<Parameter*> Sequential::parameters() {
  std::vector<Parameter*> all;
  for (auto& block : blocks_) {
    for (Parameter* parameter : block->parameters()) all.push_back(parameter);
  }
  return all;
}

}  // namespace trainer
