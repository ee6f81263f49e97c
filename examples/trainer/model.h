// The two networks the trainer offers, built from the blocks as a Gluon user would.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parameter.h"
#include "sequential.h"

namespace trainer {

// A network and the parameters it owns. Not movable: the blocks point into params.
struct Model {
  ParameterDict params;
  Sequential net{"net"};
  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
};

// kind "mlp": Flatten, Dense(128), ReLU, Dropout, Dense(classes).
// kind "cnn": two rounds of Conv2D(3x3, same size), ReLU, MaxPool2D(2), then Flatten, Dropout,
// Dense(classes). image_shape is [channels, height, width]. Parameters are initialised from
// init_seed. Throws std::invalid_argument naming an unknown kind.
std::unique_ptr<Model> build_model(const std::string& kind, const std::vector<int64_t>& image_shape,
                                   int32_t classes, double dropout, uint64_t init_seed);

}  // namespace trainer
