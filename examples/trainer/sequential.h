// Sequential: blocks run one after another. Its backward runs them last to first and, as soon as
// one block has written its parameters' gradients, tells a listener (the DistributedTrainer) that
// those gradients are ready. This hook is how communication overlaps the rest of backward: the
// last layer's gradients are on the wire while the first layers are still being differentiated.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "block.h"

namespace trainer {

using GradientReadyHook = std::function<void(Parameter&)>;

class Sequential : public Block {
 public:
  explicit Sequential(std::string name) : name_(std::move(name)) {}
  void add(std::unique_ptr<Block> block) { blocks_.push_back(std::move(block)); }

  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::vector<Parameter*> parameters() override;
  std::string name() const override { return name_; }

  // Called once per parameter during backward, in the order gradients become ready.
  void set_gradient_ready_hook(GradientReadyHook hook) { hook_ = std::move(hook); }
  const std::vector<std::unique_ptr<Block>>& blocks() const { return blocks_; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Block>> blocks_;
  GradientReadyHook hook_;
};

}  // namespace trainer
