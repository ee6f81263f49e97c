// Rank discovery: which launcher started this process, and what rank and size it gave us. A pure
// function over an injectable environment, so that tests can feed each launcher's variables.
//
// Sources, first match wins; rank and size come as a pair or not at all:
//   1. explicit config (config_rank / config_size)
//   2. HVDC_RANK / HVDC_SIZE (+ HVDC_LOCAL_RANK / HVDC_LOCAL_SIZE), what hvdcrun sets
//   3. Open MPI: OMPI_COMM_WORLD_RANK / _SIZE (+ _LOCAL_RANK / _LOCAL_SIZE)
//   4. torchrun: RANK + WORLD_SIZE + LOCAL_RANK + MASTER_ADDR (+ LOCAL_WORLD_SIZE)
//   5. Slurm: SLURM_PROCID / SLURM_NTASKS (+ SLURM_LOCALID), only inside a job step
//   6. MPICH / Hydra: PMI_RANK / PMI_SIZE (+ MPI_LOCALRANKID / MPI_LOCALNRANKS)
//   7. otherwise a singleton: rank 0 of 1
// torchrun comes before Slurm because `srun ... torchrun` hands every worker its node task's
// Slurm ids. Slurm counts only inside a job step (SLURM_STEP_ID set to a normal step id): an
// sbatch script without srun is one process, not rank 0 of SLURM_NTASKS.
//
// The two explicit sources (config, HVDC_*) are strict: half a pair is an error. A launcher's
// variables that are incomplete (RANK without WORLD_SIZE, OMPI_COMM_WORLD_RANK without _SIZE, Slurm
// ids outside a step) do not match, and the next source is tried: stray variables from another
// tool must not make a job fail. Any variable that is read and malformed (not a decimal integer,
// negative, rank >= size, size 0, a port outside 1..65535) is an error naming it and its value,
// whichever source it belongs to. Empty variables count as unset.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"

namespace hvdc::bootstrap {

// getenv-like: the value of a variable, or nullptr when it is not set.
using EnvLookup = std::function<const char*(const char* name)>;

// The process environment, through std::getenv.
EnvLookup process_environment();

struct LaunchInfo {
  // "config", "HVDC_RANK/HVDC_SIZE", "Open MPI", "torchrun", "Slurm", "MPICH/Hydra", "singleton"
  std::string source;
  int rank = 0;
  int size = 1;
  // What the launcher says, -1 where it says nothing. Only a hint (a GPU can be picked before
  // init): the topology comes from an allgather of host identities after bootstrap.
  int local_rank = -1;
  int local_size = -1;
  // Open MPI (OMPI_COMM_WORLD_RANK/_SIZE) or MPICH/Hydra (PMI_RANK/PMI_SIZE) variables are present
  // as complete pairs, whichever source won: the MPI bootstrap plugin could be used.
  bool mpi_launched = false;
  // Where rank 0 hosts the TCP store: HVDC_MASTER_ADDR, else MASTER_ADDR under torchrun, else
  // empty.
  std::string master_addr;
  // HVDC_MASTER_PORT, else MASTER_PORT + 1 under torchrun, else 0.
  int master_port = 0;
  // A remark for the log, e.g. why MASTER_PORT + 1 was chosen; empty when there is none.
  std::string note;
};

// config_rank / config_size: -1 when not given. On error, *out is left unchanged.
common::Status discover_launch(const EnvLookup& env, int config_rank, int config_size,
                               LaunchInfo* out);

// One line for the info log: source, rank, size, local rank, store address and the note.
std::string describe_launch(const LaunchInfo& info);

}  // namespace hvdc::bootstrap
