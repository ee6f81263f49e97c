// The blocks without parameters that reshape or gate values: ReLU, Dropout and Flatten.
#pragma once

#include "block.h"

namespace trainer {

class ReLU : public Block {
 public:
  explicit ReLU(std::string name) : name_(std::move(name)) {}
  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::string name() const override { return name_; }

 private:
  std::string name_;
  Tensor input_;
};

// Inverted dropout: while training, zeroes each value with probability `rate` and scales the
// survivors by 1 / (1 - rate), so inference needs no rescaling.
class Dropout : public Block {
 public:
  Dropout(std::string name, double rate);
  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::string name() const override { return name_; }

 private:
  std::string name_;
  double rate_;
  Tensor mask_;  // the scale applied to each value in the last forward (0 or 1 / (1 - rate))
};

// [batch, d1, d2, ...] -> [batch, d1 * d2 * ...].
class Flatten : public Block {
 public:
  explicit Flatten(std::string name) : name_(std::move(name)) {}
  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::vector<int64_t> input_shape_;
};

}  // namespace trainer
