#include <algorithm>

#include "dataset.h"

namespace trainer {

void Dataset::gather(const std::vector<int64_t>& indices, Tensor& images_out,
                     std::vector<int32_t>& labels_out) const {
  std::vector<int64_t> shape = images.shape();
  const size_t per_image = count() == 0 ? 0 : images.size() / static_cast<size_t>(count());
  shape[0] = static_cast<int64_t>(indices.size());
  images_out = Tensor(shape);
  labels_out.clear();
  for (size_t i = 0; i < indices.size(); ++i) {
    const float* source = images.data() + indices[i] * static_cast<int64_t>(per_image);
    std::copy(source, source + per_image, images_out.data() + i * per_image);
    labels_out.push_back(labels[indices[i]]);
  }
}

}  // namespace trainer
