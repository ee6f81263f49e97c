// Local mode: hvdcrun starts N ranks on this machine itself, passes on their output with a rank
// prefix, stops them all when one fails or when hvdcrun is signalled, and reports the job's exit
// status (see usage.cc for the contract).
#pragma once

#include "tools/hvdcrun/options.h"

namespace hvdc::hvdcrun {

// Runs the job to the end; returns hvdcrun's exit status.
int run_local_job(const Options& options);

}  // namespace hvdc::hvdcrun
