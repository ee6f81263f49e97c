// Checkpoints: rank 0 saves, every rank resumes. Horovod's rule is that only rank 0 writes
// (every rank holds the same state, and N writers would race on one file); on resume rank 0 reads
// the file and broadcasts it, so the other ranks need no access to it.
//
// A checkpoint holds the parameters, the optimizer's state (momentum, or Adam's moments), the
// number of updates taken (Adam's bias correction uses it), the epochs done and the seed. The
// seed and the epoch are the whole random state: every epoch draws its shuffle and its dropout
// masks from generators seeded by (seed, epoch, rank), so a run resumed after epoch 2 draws
// exactly what an uninterrupted run draws in epoch 3.
#pragma once

#include <cstdint>
#include <string>

#include "optimizer.h"
#include "parameter.h"

namespace trainer {

struct TrainingState {
  int64_t epochs_done = 0;
  int64_t steps_taken = 0;
  uint64_t seed = 0;
};

// Call on rank 0 only. Writes "<path>.tmp", flushes it to disk, then renames it over path, so a
// crash never leaves a half-written checkpoint. model_tag names the model and optimizer; a
// resume checks it. Throws std::runtime_error naming the path.
void save_checkpoint(const std::string& path, const std::string& model_tag,
                     const TrainingState& state, ParameterDict& params, Optimizer& optimizer);

// Call on every rank. Rank 0 reads path; every rank receives the state by broadcast. If rank 0
// cannot read it (missing, corrupt, another model), every rank throws std::runtime_error.
TrainingState resume_checkpoint(const std::string& path, const std::string& model_tag, int rank,
                                ParameterDict& params, Optimizer& optimizer);

}  // namespace trainer
