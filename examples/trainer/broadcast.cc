#include "broadcast.h"

#include <hvdc.hpp>

namespace trainer {

namespace {

// Starts one broadcast per tensor, then waits for them all: hvdc may run them together.
void broadcast_all(const std::vector<std::pair<std::string, Tensor*>>& named, int root_rank) {
  std::vector<hvdc::Handle> handles;
  for (const auto& [name, tensor] : named) {
    hvdc::Options options;
    options.name = name;
    handles.push_back(
        hvdc::broadcast_async(tensor->data(), tensor->data(), tensor->size(), root_rank, options));
  }
  for (hvdc::Handle& handle : handles) handle.wait();
}

}  // namespace

void broadcast_parameters(ParameterDict& params, int root_rank) {
  std::vector<std::pair<std::string, Tensor*>> named;
  for (Parameter* parameter : params.in_order()) {
    named.emplace_back("param." + parameter->name, &parameter->data);
  }
  broadcast_all(named, root_rank);
}

void broadcast_tensors(const std::vector<Tensor*>& tensors, int root_rank,
                       const std::string& prefix) {
  std::vector<std::pair<std::string, Tensor*>> named;
  for (size_t i = 0; i < tensors.size(); ++i) {
    named.emplace_back(prefix + "." + std::to_string(i), tensors[i]);
  }
  broadcast_all(named, root_rank);
}

}  // namespace trainer
