#include "max_pool2d.h"

#include <stdexcept>

namespace trainer {

MaxPool2D::MaxPool2D(std::string name, int64_t size) : name_(std::move(name)), size_(size) {
  if (size < 1) throw std::invalid_argument(name_ + ": pool size must be >= 1");
}

Tensor MaxPool2D::forward(const Tensor& input, const ForwardContext&) {
  check_rank(name_, input, 4);
  const int64_t planes = input.dim(0) * input.dim(1);
  const int64_t height = input.dim(2), width = input.dim(3);
  const int64_t out_height = height / size_, out_width = width / size_;
  if (out_height == 0 || out_width == 0) {
    throw std::invalid_argument(name_ + ": input " + input.shape_text() +
                                " is smaller than the pool window");
  }
  input_shape_ = input.shape();
  Tensor output({input.dim(0), input.dim(1), out_height, out_width});
  argmax_.assign(output.size(), 0);
  size_t out = 0;
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t oy = 0; oy < out_height; ++oy) {
      for (int64_t ox = 0; ox < out_width; ++ox, ++out) {
        size_t best = static_cast<size_t>((p * height + oy * size_) * width + ox * size_);
        for (int64_t dy = 0; dy < size_; ++dy) {
          for (int64_t dx = 0; dx < size_; ++dx) {
            const size_t at =
                static_cast<size_t>((p * height + oy * size_ + dy) * width + ox * size_ + dx);
            if (input[at] > input[best]) best = at;
          }
        }
        argmax_[out] = best;
        output[out] = input[best];
      }
    }
  }
  return output;
}

Tensor MaxPool2D::backward(const Tensor& grad_output) {
  Tensor grad_input(input_shape_);
  for (size_t i = 0; i < grad_output.size(); ++i) grad_input[argmax_[i]] += grad_output[i];
  return grad_input;
}

}  // namespace trainer
