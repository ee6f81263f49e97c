#include "loss.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace trainer {

std::vector<float> SoftmaxCrossEntropy::forward(const Tensor& logits,
                                                const std::vector<int32_t>& labels) {
  if (logits.ndim() != 2 || static_cast<size_t>(logits.dim(0)) != labels.size()) {
    throw std::invalid_argument("softmax cross-entropy: logits " + logits.shape_text() +
                                " do not match " + std::to_string(labels.size()) + " labels");
  }
  const int64_t batch = logits.dim(0), classes = logits.dim(1);
  probabilities_ = logits;
  labels_ = labels;
  std::vector<float> losses(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) {
    if (labels[n] < 0 || labels[n] >= classes) {
      throw std::invalid_argument("softmax cross-entropy: label " + std::to_string(labels[n]) +
                                  " is outside [0, " + std::to_string(classes) + ")");
    }
    float* row = probabilities_.data() + n * classes;
    // Subtracting the row's maximum keeps exp() from overflowing; the result is unchanged.
    const float top = *std::max_element(row, row + classes);
    double total = 0.0;
    for (int64_t k = 0; k < classes; ++k) total += std::exp(static_cast<double>(row[k] - top));
    const double log_total = std::log(total);
    losses[n] = static_cast<float>(log_total - (row[labels[n]] - top));
    for (int64_t k = 0; k < classes; ++k)
      row[k] = static_cast<float>(std::exp(row[k] - top - log_total));
  }
  return losses;
}

Tensor SoftmaxCrossEntropy::backward() const {
  Tensor grad = probabilities_;
  const int64_t classes = grad.ndim() == 2 ? grad.dim(1) : 0;
  for (size_t n = 0; n < labels_.size(); ++n) grad[n * classes + labels_[n]] -= 1.0f;
  return grad;
}

std::vector<int32_t> SoftmaxCrossEntropy::predictions() const {
  std::vector<int32_t> predicted(labels_.size());
  const int64_t classes = probabilities_.ndim() == 2 ? probabilities_.dim(1) : 0;
  for (size_t n = 0; n < labels_.size(); ++n) {
    const float* row = probabilities_.data() + n * classes;
    predicted[n] = static_cast<int32_t>(std::max_element(row, row + classes) - row);
  }
  return predicted;
}

}  // namespace trainer
