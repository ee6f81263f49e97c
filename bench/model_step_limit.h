// The staged limit of a gradient step on heap buffers: what the step costs with no engine, no
// negotiation and no transport, only the fewest copies two processes need when neither can map
// the other's buffers. Each fusion group's input is split in two halves; each rank copies the
// half its peer reduces into a shared stage, reduces its own half from its input and the peer's
// stage into its output and into the peer's stage, then copies the peer's result out of its
// stage. Outputs are written past the cache (they are cold: a step cycles through the whole
// model). This is hvdc's heap path for one host (src/ops/cpu/allreduce/in_place_local.cc) with
// everything but the memory traffic taken away, measured on the same tensors in the same run.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "model_step_options.h"
#include "spin_barrier.h"

namespace hvdc_model_step {

class StagedLimit {
 public:
  StagedLimit() = default;
  StagedLimit(const StagedLimit&) = delete;
  StagedLimit& operator=(const StagedLimit&) = delete;
  ~StagedLimit();

  // Collective over MPI_COMM_WORLD. Groups the tensors in backward order up to `fusion_bytes`
  // (a larger tensor alone) and maps the stage. false, with *error, unless the world is two
  // ranks on one host.
  bool open(const Model& m, size_t fusion_bytes, std::string* error);
  // One step: every tensor's in[i] summed over both ranks into out[i].
  void step(const std::vector<float*>& in, const std::vector<float*>& out);

 private:
  struct Group {
    std::vector<size_t> tensors;  // in submission (backward) order
    size_t elements = 0;
  };
  void step_window(const Group& g, size_t begin, size_t end, const std::vector<float*>& in,
                   const std::vector<float*>& out);

  std::vector<Group> groups_;
  std::vector<size_t> elements_;  // by tensor
  size_t window_elements_ = 0;    // elements of a group staged at a time
  MPI_Win window_ = MPI_WIN_NULL;
  hvdc_bench::SpinBarrier* meet_ = nullptr;  // in the shared window
  float* stage_[2] = {nullptr, nullptr};     // each rank's stage, mapped in both
  std::vector<float> block_;                 // one block of this rank's sums
  int rank_ = 0;
  int sense_ = 0;
};

}  // namespace hvdc_model_step
