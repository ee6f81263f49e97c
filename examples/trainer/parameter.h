// Parameter and ParameterDict, as in Gluon: every trainable array has a unique name, a value and
// a gradient of the same shape. The name is what identifies the gradient's allreduce across ranks,
// so ranks may finish their gradients in any order and still reduce the right tensors together.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tensor.h"

namespace trainer {

struct Parameter {
  std::string name;
  Tensor data;
  Tensor grad;  // written by the owning block's backward
};

// Owns the parameters; blocks keep pointers into it. Iteration order is creation order, which is
// the same on every rank because every rank builds the same model.
class ParameterDict {
 public:
  // Throws std::invalid_argument if the name is taken.
  Parameter& add(const std::string& name, const std::vector<int64_t>& shape);
  // Throws std::out_of_range naming the parameter if there is none by that name.
  Parameter& get(const std::string& name);

  const std::vector<Parameter*>& in_order() const { return order_; }
  size_t size() const { return order_.size(); }
  size_t total_elements() const;

 private:
  std::map<std::string, std::unique_ptr<Parameter>> by_name_;
  std::vector<Parameter*> order_;
};

// Glorot/Xavier uniform initialisation: keeps activations' variance steady through a layer.
void xavier_uniform(Tensor& weight, int64_t fan_in, int64_t fan_out, std::mt19937_64& rng);

}  // namespace trainer
