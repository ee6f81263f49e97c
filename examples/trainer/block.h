// Block: one layer of a network, as in Gluon. forward() keeps what backward() needs; backward()
// takes the gradient of the loss with respect to the block's output, writes the gradients of the
// block's parameters, and returns the gradient with respect to its input.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "parameter.h"
#include "tensor.h"

namespace trainer {

struct ForwardContext {
  bool training = false;           // Dropout is active only while training
  std::mt19937_64* rng = nullptr;  // randomness for Dropout; required while training
};

class Block {
 public:
  virtual ~Block() = default;
  virtual Tensor forward(const Tensor& input, const ForwardContext& context) = 0;
  virtual Tensor backward(const Tensor& grad_output) = 0;
  // The parameters whose gradients backward() writes (none for ReLU, Flatten, ...).
  virtual std::vector<Parameter*> parameters() { return {}; }
  virtual std::string name() const = 0;
};

// Throws std::invalid_argument naming the block if input does not have the expected rank.
void check_rank(const std::string& block, const Tensor& input, size_t rank);

}  // namespace trainer
