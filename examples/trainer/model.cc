#include "model.h"

#include <random>
#include <stdexcept>

#include "activation.h"
#include "conv2d.h"
#include "dense.h"
#include "max_pool2d.h"

namespace trainer {

namespace {

constexpr int64_t kHiddenUnits = 128;

void build_mlp(Model& model, const std::vector<int64_t>& image_shape, int32_t classes,
               double dropout, std::mt19937_64& rng) {
  const int64_t inputs = image_shape[0] * image_shape[1] * image_shape[2];
  model.net.add(std::make_unique<Flatten>("flatten0"));
  model.net.add(std::make_unique<Dense>(model.params, "dense0", inputs, kHiddenUnits, rng));
  model.net.add(std::make_unique<ReLU>("relu0"));
  model.net.add(std::make_unique<Dropout>("dropout0", dropout));
  model.net.add(std::make_unique<Dense>(model.params, "dense1", kHiddenUnits, classes, rng));
}

void build_cnn(Model& model, const std::vector<int64_t>& image_shape, int32_t classes,
               double dropout, std::mt19937_64& rng) {
  const int64_t filters[2] = {16, 32};
  int64_t channels = image_shape[0], height = image_shape[1], width = image_shape[2];
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    model.net.add(
        std::make_unique<Conv2D>(model.params, "conv" + n, channels, filters[i], 3, 1, rng));
    model.net.add(std::make_unique<ReLU>("relu" + n));
    model.net.add(std::make_unique<MaxPool2D>("pool" + n, 2));
    channels = filters[i];
    height /= 2;
    width /= 2;
  }
  if (height < 1 || width < 1) throw std::invalid_argument("--model cnn: images are too small");
  model.net.add(std::make_unique<Flatten>("flatten0"));
  model.net.add(std::make_unique<Dropout>("dropout0", dropout));
  model.net.add(
      std::make_unique<Dense>(model.params, "dense0", channels * height * width, classes, rng));
}

}  // namespace

std::unique_ptr<Model> build_model(const std::string& kind, const std::vector<int64_t>& image_shape,
                                   int32_t classes, double dropout, uint64_t init_seed) {
  if (image_shape.size() != 3) throw std::invalid_argument("build_model: image_shape is [c, h, w]");
  auto model = std::make_unique<Model>();
  std::mt19937_64 rng(init_seed);
  if (kind == "mlp") {
    build_mlp(*model, image_shape, classes, dropout, rng);
  } else if (kind == "cnn") {
    build_cnn(*model, image_shape, classes, dropout, rng);
  } else {
    throw std::invalid_argument("--model: expected mlp or cnn, got '" + kind + "'");
  }
  return model;
}

}  // namespace trainer
