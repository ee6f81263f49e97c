// mpirun and srun modes: hvdcrun prepares the environment and replaces itself with the launcher,
// which then owns the ranks, their output, signals and the exit status.
#pragma once

#include <string>
#include <vector>

#include "tools/hvdcrun/job_env.h"
#include "tools/hvdcrun/options.h"

namespace hvdc::hvdcrun {

// mpirun's argv for `env`, the environment mpirun will inherit (HVDC_SECRET already set in it).
std::vector<std::string> mpirun_command(const Options& options, const EnvMap& env);

// srun's argv.
std::vector<std::string> srun_command(const Options& options);

// What srun's tasks need on top of `env` (secret, store mode, master address and port; -x
// values) and without the per-rank HVDC_* variables. Fails outside a Slurm allocation, or when
// no master address can be found.
Status prepare_srun_environment(const Options& options, EnvMap* env);

// Generate the secret, set up the environment, exec the launcher. Return only on failure, with
// hvdcrun's exit status.
int exec_mpirun(const Options& options);
int exec_srun(const Options& options);

}  // namespace hvdc::hvdcrun
