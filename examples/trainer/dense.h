// Dense: y = x W^T + b for x of shape [batch, in], W [out, in], b [out].
#pragma once

#include "block.h"

namespace trainer {

class Dense : public Block {
 public:
  // Registers "<prefix>_weight" and "<prefix>_bias" in params and initialises them from rng.
  Dense(ParameterDict& params, const std::string& prefix, int64_t in_units, int64_t out_units,
        std::mt19937_64& rng);
  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::vector<Parameter*> parameters() override { return {weight_, bias_}; }
  std::string name() const override { return prefix_; }

 private:
  std::string prefix_;
  int64_t in_units_, out_units_;
  Parameter* weight_;
  Parameter* bias_;
  Tensor input_;
};

}  // namespace trainer
