#include "dense.h"

#include <stdexcept>

namespace trainer {

void check_rank(const std::string& block, const Tensor& input, size_t rank) {
  if (input.ndim() != rank) {
    throw std::invalid_argument(block + ": expected an input of rank " + std::to_string(rank) +
                                ", got shape " + input.shape_text());
  }
}

Dense::Dense(ParameterDict& params, const std::string& prefix, int64_t in_units, int64_t out_units,
             std::mt19937_64& rng)
    : prefix_(prefix),
      in_units_(in_units),
      out_units_(out_units),
      weight_(&params.add(prefix + "_weight", {out_units, in_units})),
      bias_(&params.add(prefix + "_bias", {out_units})) {
  xavier_uniform(weight_->data, in_units, out_units, rng);
}

Tensor Dense::forward(const Tensor& input, const ForwardContext&) {
  check_rank(prefix_, input, 2);
  if (input.dim(1) != in_units_) {
    throw std::invalid_argument(prefix_ + ": expected " + std::to_string(in_units_) +
                                " input features, got shape " + input.shape_text());
  }
  input_ = input;
  const int64_t batch = input.dim(0);
  Tensor output({batch, out_units_});
  const float* w = weight_->data.data();
  for (int64_t n = 0; n < batch; ++n) {
    const float* x = input.data() + n * in_units_;
    for (int64_t o = 0; o < out_units_; ++o) {
      float sum = bias_->data[o];
      for (int64_t i = 0; i < in_units_; ++i) sum += x[i] * w[o * in_units_ + i];
      output[n * out_units_ + o] = sum;
    }
  }
  return output;
}

Tensor Dense::backward(const Tensor& grad_output) {
  const int64_t batch = input_.dim(0);
  Tensor grad_input({batch, in_units_});
  weight_->grad.fill(0.0f);
  bias_->grad.fill(0.0f);
  float* dw = weight_->grad.data();
  const float* w = weight_->data.data();
  for (int64_t n = 0; n < batch; ++n) {
    const float* x = input_.data() + n * in_units_;
    float* dx = grad_input.data() + n * in_units_;
    for (int64_t o = 0; o < out_units_; ++o) {
      const float g = grad_output[n * out_units_ + o];
      bias_->grad[o] += g;
      for (int64_t i = 0; i < in_units_; ++i) {
        dw[o * in_units_ + i] += g * x[i];
        dx[i] += g * w[o * in_units_ + i];
      }
    }
  }
  return grad_input;
}

}  // namespace trainer
