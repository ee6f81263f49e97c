// Softmax cross-entropy over class scores ("logits"), as Gluon's SoftmaxCrossEntropyLoss with
// integer labels. Like Gluon, backward gives the gradient of the *sum* of the per-sample losses;
// Trainer::step(batch_size) divides by the batch size.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor.h"

namespace trainer {

class SoftmaxCrossEntropy {
 public:
  // logits [batch, classes]; labels in [0, classes). Returns the per-sample losses and keeps the
  // probabilities for backward. Throws std::invalid_argument on a label out of range.
  std::vector<float> forward(const Tensor& logits, const std::vector<int32_t>& labels);
  // d(sum of losses) / d logits = softmax - one_hot(label).
  Tensor backward() const;
  // The most probable class of each sample in the last forward.
  std::vector<int32_t> predictions() const;

 private:
  Tensor probabilities_;
  std::vector<int32_t> labels_;
};

}  // namespace trainer
