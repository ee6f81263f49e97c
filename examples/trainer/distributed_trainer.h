// DistributedTrainer: the Trainer that averages gradients over every rank with hvdc, as Horovod's
// hvd.DistributedTrainer does for MXNet Gluon. This file and broadcast.h are all the trainer
// needs from hvdc to train data-parallel:
//
//  1. attach(net) installs a hook in the network's backward. Each time a block has written its
//     parameters' gradients, the hook starts one named asynchronous allreduce (AVERAGE) on each
//     gradient, in place. Gradients become ready last layer first, so the last layers' gradients
//     travel while the first layers are still being differentiated: communication overlaps
//     computation, and hvdc fuses small gradients into larger messages on its own.
//  2. step(batch_size) waits for every pending allreduce, then applies the optimizer. Every rank
//     then holds the same averaged gradients and takes the same update.
//
// The name ("grad.<parameter name>") identifies the tensor across ranks, so ranks may finish
// gradients in different orders; hvdc's negotiation pairs them up by name.
#pragma once

#include <hvdc.hpp>

#include <vector>

#include "sequential.h"
#include "trainer.h"

namespace trainer {

class DistributedTrainer : public Trainer {
 public:
  DistributedTrainer(ParameterDict& params, std::unique_ptr<Optimizer> optimizer)
      : Trainer(params, std::move(optimizer)) {}

  // Routes net's finished gradients to submit_gradient(). net must outlive its use.
  void attach(Sequential& net);
  // Starts the average of one gradient over all ranks (in place). Called by the hook.
  void submit_gradient(Parameter& parameter);
  // Waits for every submitted gradient, then updates. batch_size must be the same number on
  // every rank (the per-rank batch size of the run, even for a short last batch): ranks that
  // divided the same averaged gradient by different numbers would drift apart.
  void step(int64_t batch_size) override;

  // Seconds step() spent blocked on communication since the last reset.
  double seconds_waiting() const { return seconds_waiting_; }
  void reset_wait_clock() { seconds_waiting_ = 0.0; }

 private:
  std::vector<hvdc::Handle> pending_;  // one per gradient submitted since the last step
  double seconds_waiting_ = 0.0;
};

}  // namespace trainer
