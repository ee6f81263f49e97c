#include "trainer.h"

#include <stdexcept>
#include <string>

namespace trainer {

void Trainer::step(int64_t batch_size) {
  apply_updates(batch_size);
}

void Trainer::apply_updates(int64_t batch_size) {
  if (batch_size < 1) {
    throw std::invalid_argument("Trainer::step: batch_size must be >= 1, got " +
                                std::to_string(batch_size));
  }
  ++steps_;
  const float rescale = 1.0f / static_cast<float>(batch_size);
  const auto& parameters = params_.in_order();
  for (size_t i = 0; i < parameters.size(); ++i) {
    optimizer_->update(i, *parameters[i], rescale, steps_);
  }
}

}  // namespace trainer
