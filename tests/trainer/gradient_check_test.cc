// Every block's backward against central finite differences of its forward.
//
// For a block y = f(x; w) and fixed random weights r, take L = sum(r * y). backward(r) must give
// dL/dx and dL/dw; each entry is compared with (L(v + h) - L(v - h)) / 2h. The forward runs in
// float32, so h is 1e-2 and the tolerance is loose enough for float rounding yet far below the
// size of any real mistake (a wrong sign, a transposed index, a missing term).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "activation.h"
#include "conv2d.h"
#include "dense.h"
#include "loss.h"
#include "max_pool2d.h"
#include "sequential.h"

namespace trainer {
namespace {

constexpr float kStep = 1e-2f;

Tensor random_tensor(std::vector<int64_t> shape, std::mt19937_64& rng) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (size_t i = 0; i < t.size(); ++i) t[i] = value(rng);
  return t;
}

void expect_close(double numeric, double analytic, const std::string& what) {
  EXPECT_NEAR(numeric, analytic, 2e-3 + 1e-2 * std::fabs(analytic)) << what;
}

// Forward in training mode with the same dropout mask every time (the rng is reseeded).
double weighted_output(Block& block, const Tensor& input, const Tensor& weights) {
  std::mt19937_64 rng(99);
  const Tensor output = block.forward(input, ForwardContext{true, &rng});
  double total = 0.0;
  for (size_t i = 0; i < output.size(); ++i) total += static_cast<double>(weights[i]) * output[i];
  return total;
}

// Compares one analytic gradient entry by entry with central differences of `values`.
void check_against_differences(Block& block, Tensor& input, const Tensor& weights, Tensor& values,
                               const Tensor& analytic, const std::string& what) {
  for (size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    values[i] = saved + kStep;
    const double above = weighted_output(block, input, weights);
    values[i] = saved - kStep;
    const double below = weighted_output(block, input, weights);
    values[i] = saved;
    expect_close((above - below) / (2.0 * kStep), analytic[i],
                 what + "[" + std::to_string(i) + "]");
  }
}

void check_block(Block& block, Tensor input, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::mt19937_64 dropout_rng(99);
  const Tensor output = block.forward(input, ForwardContext{true, &dropout_rng});
  const Tensor weights = random_tensor(output.shape(), rng);
  const Tensor grad_input = block.backward(weights);
  ASSERT_EQ(grad_input.shape(), input.shape()) << block.name();
  std::vector<Tensor> grads;  // copies, taken before the finite-difference forwards run
  for (Parameter* p : block.parameters()) grads.push_back(p->grad);
  check_against_differences(block, input, weights, input, grad_input, block.name() + " input");
  std::vector<Parameter*> params = block.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    check_against_differences(block, input, weights, params[k]->data, grads[k], params[k]->name);
  }
}

// Values at least 0.05 apart and 0.05 away from zero: no finite-difference step of 1e-2 crosses a
// ReLU kink or swaps a max-pool winner.
Tensor spaced_tensor(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(std::move(shape));
  std::vector<float> values;
  for (size_t i = 0; i < t.size(); ++i) {
    const float magnitude = 0.05f * static_cast<float>(i / 2 + 1);
    values.push_back(i % 2 ? magnitude : -magnitude);
  }
  std::mt19937_64 rng(seed);
  std::shuffle(values.begin(), values.end(), rng);
  for (size_t i = 0; i < t.size(); ++i) t[i] = values[i];
  return t;
}

TEST(GradientCheck, Dense) {
  ParameterDict params;
  std::mt19937_64 rng(3);
  Dense dense(params, "dense0", 5, 4, rng);
  for (size_t i = 0; i < params.get("dense0_bias").data.size(); ++i)
    params.get("dense0_bias").data[i] = 0.1f * i;
  check_block(dense, random_tensor({3, 5}, rng));
}

TEST(GradientCheck, Conv2D) {
  ParameterDict params;
  std::mt19937_64 rng(4);
  Conv2D conv(params, "conv0", 2, 3, 3, 1, rng);
  check_block(conv, random_tensor({2, 2, 5, 4}, rng));
}

TEST(GradientCheck, Conv2DWithoutPadding) {
  ParameterDict params;
  std::mt19937_64 rng(5);
  Conv2D conv(params, "conv0", 1, 2, 2, 0, rng);
  check_block(conv, random_tensor({1, 1, 4, 4}, rng));
}

TEST(GradientCheck, ReLU) {
  ReLU relu("relu0");
  check_block(relu, spaced_tensor({3, 7}, 6));
}

TEST(GradientCheck, Dropout) {
  Dropout dropout("dropout0", 0.5);
  check_block(dropout, spaced_tensor({4, 6}, 7));
}

TEST(GradientCheck, MaxPool2D) {
  MaxPool2D pool("pool0", 2);
  check_block(pool, spaced_tensor({2, 2, 4, 5}, 8));  // width 5: the last column is dropped
}

TEST(GradientCheck, Flatten) {
  Flatten flatten("flatten0");
  std::mt19937_64 rng(9);
  check_block(flatten, random_tensor({2, 3, 2, 2}, rng));
}

// The chain rule through a container. Blocks with kinks (ReLU, MaxPool2D) are left out: random
// activations could sit within one step of a kink, and they are checked alone above.
TEST(GradientCheck, SequentialChainsTheBlocks) {
  ParameterDict params;
  std::mt19937_64 rng(10);
  Sequential net("net");
  net.add(std::make_unique<Conv2D>(params, "conv0", 1, 2, 3, 1, rng));
  net.add(std::make_unique<Flatten>("flatten0"));
  net.add(std::make_unique<Dropout>("dropout0", 0.25));
  net.add(std::make_unique<Dense>(params, "dense0", 32, 3, rng));
  check_block(net, random_tensor({2, 1, 4, 4}, rng));
}

TEST(GradientCheck, SoftmaxCrossEntropy) {
  std::mt19937_64 rng(11);
  Tensor logits = random_tensor({4, 5}, rng);
  const std::vector<int32_t> labels = {0, 4, 2, 2};
  SoftmaxCrossEntropy loss;
  auto total = [&]() {
    double sum = 0.0;
    for (float l : loss.forward(logits, labels)) sum += l;
    return sum;
  };
  total();
  const Tensor analytic = loss.backward();
  for (size_t i = 0; i < logits.size(); ++i) {
    const float saved = logits[i];
    logits[i] = saved + kStep;
    const double above = total();
    logits[i] = saved - kStep;
    const double below = total();
    logits[i] = saved;
    expect_close((above - below) / (2.0 * kStep), analytic[i], "logit " + std::to_string(i));
  }
}

TEST(SequentialHook, GradientsArriveLastLayerFirst) {
  ParameterDict params;
  std::mt19937_64 rng(12);
  Sequential net("net");
  net.add(std::make_unique<Dense>(params, "dense0", 3, 4, rng));
  net.add(std::make_unique<ReLU>("relu0"));
  net.add(std::make_unique<Dense>(params, "dense1", 4, 2, rng));
  std::vector<std::string> order;
  net.set_gradient_ready_hook([&order](Parameter& p) { order.push_back(p.name); });
  const Tensor output = net.forward(random_tensor({2, 3}, rng), ForwardContext{});
  net.backward(Tensor(output.shape(), 1.0f));
  EXPECT_EQ(order, (std::vector<std::string>{"dense1_weight", "dense1_bias", "dense0_weight",
                                             "dense0_bias"}));
}

}  // namespace
}  // namespace trainer
