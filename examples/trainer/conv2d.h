// Conv2D: a square-kernel 2-D convolution with stride 1 and zero padding, on NCHW tensors.
// Weight [filters, channels, kernel, kernel], bias [filters]. Direct loops: the trainer's images
// are 8x8 or 28x28, where clarity beats im2col.
#pragma once

#include "block.h"

namespace trainer {

class Conv2D : public Block {
 public:
  // Registers "<prefix>_weight" and "<prefix>_bias"; padding keeps the size when 2p = k - 1.
  Conv2D(ParameterDict& params, const std::string& prefix, int64_t channels, int64_t filters,
         int64_t kernel, int64_t padding, std::mt19937_64& rng);
  Tensor forward(const Tensor& input, const ForwardContext& context) override;
  Tensor backward(const Tensor& grad_output) override;
  std::vector<Parameter*> parameters() override { return {weight_, bias_}; }
  std::string name() const override { return prefix_; }

 private:
  // The sizes of one pass: batch, input height and width, output height and width.
  struct Geometry {
    int64_t batch, height, width, out_height, out_width;
  };
  Geometry geometry(const Tensor& input) const;
  // Calls visit(input_index, weight_index, output_index, length) for every run of the forward
  // pass's multiply-adds that shares one weight: output[output_index + i] +=
  // input[input_index + i] * weight[weight_index] for i < length (one output row, clipped where
  // the kernel hangs over the padding). Forward and backward differ only in what they do with a
  // run, and the contiguous inner loop is one the compiler vectorises.
  template <typename Visit>
  void for_each_run(const Geometry& g, Visit visit) const;

  std::string prefix_;
  int64_t channels_, filters_, kernel_, padding_;
  Parameter* weight_;
  Parameter* bias_;
  Tensor input_;
};

}  // namespace trainer
