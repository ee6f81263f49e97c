#include "conv2d.h"

#include <algorithm>
#include <stdexcept>

namespace trainer {

Conv2D::Conv2D(ParameterDict& params, const std::string& prefix, int64_t channels, int64_t filters,
               int64_t kernel, int64_t padding, std::mt19937_64& rng)
    : prefix_(prefix),
      channels_(channels),
      filters_(filters),
      kernel_(kernel),
      padding_(padding),
      weight_(&params.add(prefix + "_weight", {filters, channels, kernel, kernel})),
      bias_(&params.add(prefix + "_bias", {filters})) {
  xavier_uniform(weight_->data, channels * kernel * kernel, filters * kernel * kernel, rng);
}

Conv2D::Geometry Conv2D::geometry(const Tensor& input) const {
  check_rank(prefix_, input, 4);
  if (input.dim(1) != channels_) {
    throw std::invalid_argument(prefix_ + ": expected " + std::to_string(channels_) +
                                " channels, got shape " + input.shape_text());
  }
  Geometry g{input.dim(0), input.dim(2), input.dim(3), 0, 0};
  g.out_height = g.height + 2 * padding_ - kernel_ + 1;
  g.out_width = g.width + 2 * padding_ - kernel_ + 1;
  if (g.out_height <= 0 || g.out_width <= 0) {
    throw std::invalid_argument(prefix_ + ": input " + input.shape_text() +
                                " is smaller than the kernel");
  }
  return g;
}

template <typename Visit>
void Conv2D::for_each_run(const Geometry& g, Visit visit) const {
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t f = 0; f < filters_; ++f) {
      for (int64_t c = 0; c < channels_; ++c) {
        for (int64_t ky = 0; ky < kernel_; ++ky) {
          for (int64_t kx = 0; kx < kernel_; ++kx) {
            // Output columns whose input column ox + kx - padding lies inside the image.
            const int64_t first = std::max<int64_t>(0, padding_ - kx);
            const int64_t last = std::min<int64_t>(g.out_width, g.width + padding_ - kx);
            if (first >= last) continue;
            const int64_t weight = ((f * channels_ + c) * kernel_ + ky) * kernel_ + kx;
            for (int64_t oy = 0; oy < g.out_height; ++oy) {
              const int64_t y = oy + ky - padding_;
              if (y < 0 || y >= g.height) continue;
              visit(((n * channels_ + c) * g.height + y) * g.width + first + kx - padding_, weight,
                    ((n * filters_ + f) * g.out_height + oy) * g.out_width + first, last - first);
            }
          }
        }
      }
    }
  }
}

Tensor Conv2D::forward(const Tensor& input, const ForwardContext&) {
  const Geometry g = geometry(input);
  input_ = input;
  Tensor output({g.batch, filters_, g.out_height, g.out_width});
  const int64_t plane = g.out_height * g.out_width;
  for (size_t i = 0; i < output.size(); ++i) output[i] = bias_->data[(i / plane) % filters_];
  const float* x = input.data();
  const float* w = weight_->data.data();
  float* y = output.data();
  for_each_run(g, [&](int64_t xi, int64_t wi, int64_t yi, int64_t length) {
    for (int64_t i = 0; i < length; ++i) y[yi + i] += x[xi + i] * w[wi];
  });
  return output;
}

Tensor Conv2D::backward(const Tensor& grad_output) {
  const Geometry g = geometry(input_);
  Tensor grad_input(input_.shape());
  weight_->grad.fill(0.0f);
  bias_->grad.fill(0.0f);
  const int64_t plane = g.out_height * g.out_width;
  for (size_t i = 0; i < grad_output.size(); ++i) {
    bias_->grad[(i / plane) % filters_] += grad_output[i];
  }
  const float* x = input_.data();
  const float* w = weight_->data.data();
  const float* dy = grad_output.data();
  float* dx = grad_input.data();
  float* dw = weight_->grad.data();
  for_each_run(g, [&](int64_t xi, int64_t wi, int64_t yi, int64_t length) {
    float sum = 0.0f;
    for (int64_t i = 0; i < length; ++i) {
      sum += dy[yi + i] * x[xi + i];
      dx[xi + i] += dy[yi + i] * w[wi];
    }
    dw[wi] += sum;
  });
  return grad_input;
}

}  // namespace trainer
