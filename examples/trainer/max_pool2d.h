// MaxPool2D: the maximum of each non-overlapping size x size window of an NCHW tensor (rows and
// columns that do not fill a window are dropped, as Gluon's default does).
#pragma once

#include "block.h"

namespace trainer {

class MaxPool2D : public Block {
 public:
  MaxPool2D(std::string name, int64_t size);
  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::string name() const override { return name_; }

 private:
  std::string name_;
  int64_t size_;
  std::vector<int64_t> input_shape_;
  std::vector<size_t> argmax_;  // for each output value, the input index it came from
};

}  // namespace trainer
