#include "parameter.h"

#include <cmath>
#include <stdexcept>

namespace trainer {

Parameter& ParameterDict::add(const std::string& name, const std::vector<int64_t>& shape) {
  auto parameter = std::make_unique<Parameter>();
  parameter->name = name;
  parameter->data = Tensor(shape);
  parameter->grad = Tensor(shape);
  auto [slot, inserted] = by_name_.emplace(name, std::move(parameter));
  if (!inserted) throw std::invalid_argument("parameter name '" + name + "' is used twice");
  order_.push_back(slot->second.get());
  return *slot->second;
}

Parameter& ParameterDict::get(const std::string& name) {
  auto found = by_name_.find(name);
  if (found == by_name_.end()) throw std::out_of_range("no parameter named '" + name + "'");
  return *found->second;
}

size_t ParameterDict::total_elements() const {
  size_t total = 0;
  for (const Parameter* parameter : order_) total += parameter->data.size();
  return total;
}

void xavier_uniform(Tensor& weight, int64_t fan_in, int64_t fan_out, std::mt19937_64& rng) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  std::uniform_real_distribution<double> uniform(-limit, limit);
  for (size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(uniform(rng));
}

}  // namespace trainer
