// A synthetic classification task for runs without data: each class has a fixed random 8x8
// prototype, and each image is its class's prototype plus Gaussian noise. Separable but not
// trivially so, and fully determined by the seed.
#include <random>

#include "dataset.h"

namespace trainer {

namespace {

constexpr int64_t kSide = 8;
constexpr int32_t kClasses = 10;

Dataset draw(const std::vector<float>& prototypes, int64_t count, std::mt19937_64& rng) {
  Dataset set;
  set.classes = kClasses;
  set.images = Tensor({count, 1, kSide, kSide});
  std::uniform_int_distribution<int32_t> label(0, kClasses - 1);
  std::normal_distribution<float> noise(0.0f, 0.7f);
  for (int64_t n = 0; n < count; ++n) {
    set.labels.push_back(label(rng));
    const float* prototype = prototypes.data() + set.labels.back() * kSide * kSide;
    for (int64_t p = 0; p < kSide * kSide; ++p) {
      set.images[n * kSide * kSide + p] = prototype[p] + noise(rng);
    }
  }
  return set;
}

}  // namespace

DataSplit make_synthetic(uint64_t seed, int64_t train_count, int64_t test_count) {
  std::mt19937_64 rng(seed ^ 0x5EED5EEDull);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> prototypes(kClasses * kSide * kSide);
  for (float& value : prototypes) value = pixel(rng);
  DataSplit split;
  split.train = draw(prototypes, train_count, rng);
  split.test = draw(prototypes, test_count, rng);
  split.description = "synthetic (" + std::to_string(train_count) + " train, " +
                      std::to_string(test_count) + " test)";
  return split;
}

}  // namespace trainer
