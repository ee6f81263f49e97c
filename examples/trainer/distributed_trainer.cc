#include "distributed_trainer.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace trainer {

void DistributedTrainer::attach(Sequential& net) {
  net.set_gradient_ready_hook([this](Parameter& parameter) { submit_gradient(parameter); });
}

void DistributedTrainer::submit_gradient(Parameter& parameter) {
  hvdc::Options options;
  options.name = "grad." + parameter.name;
  // In place: the gradient buffer is not touched again until step() has waited for it.
  pending_.push_back(hvdc::allreduce_async(parameter.grad.data(), parameter.grad.data(),
                                           parameter.grad.size(), hvdc::ReduceOp::Average,
                                           options));
}

void DistributedTrainer::step(int64_t batch_size) {
  if (pending_.size() != params().size()) {
    throw std::logic_error("DistributedTrainer::step: " + std::to_string(pending_.size()) + " of " +
                           std::to_string(params().size()) +
                           " gradients were submitted; was attach(net) called before backward?");
  }
  const auto start = std::chrono::steady_clock::now();
  // A failure (a dead peer, an abort) throws hvdc::Error here; the remaining handles are freed
  // by their destructors when pending_ is cleared.
  std::vector<hvdc::Handle> waiting = std::move(pending_);
  pending_.clear();
  for (hvdc::Handle& handle : waiting) handle.wait();
  seconds_waiting_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  apply_updates(batch_size);
}

}  // namespace trainer
