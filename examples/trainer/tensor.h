// Tensor: a dense, row-major float32 array with a shape. It is all the storage the trainer needs,
// and its data() pointer is what goes to hvdc without a copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace trainer {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape, float fill = 0.0f)
      : shape_(std::move(shape)), values_(element_count(shape_), fill) {}

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t axis) const { return shape_.at(axis); }
  size_t ndim() const { return shape_.size(); }
  size_t size() const { return values_.size(); }

  float* data() { return values_.data(); }
  const float* data() const { return values_.data(); }
  float& operator[](size_t i) { return values_[i]; }
  float operator[](size_t i) const { return values_[i]; }

  // Same values, another shape with the same number of elements (Flatten uses it).
  void reshape(std::vector<int64_t> shape) { shape_ = std::move(shape); }
  void fill(float value) { values_.assign(values_.size(), value); }

  std::string shape_text() const {
    std::string text = "[";
    for (size_t i = 0; i < shape_.size(); ++i) {
      text += (i ? ", " : "") + std::to_string(shape_[i]);
    }
    return text + "]";
  }

  static size_t element_count(const std::vector<int64_t>& shape) {
    return static_cast<size_t>(
        std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>()));
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<float> values_;
};

}  // namespace trainer
