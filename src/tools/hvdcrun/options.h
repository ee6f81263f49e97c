// hvdcrun's command line: what to start, how many, where, and with which launcher.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::hvdcrun {

using common::Status;

// Exit status for a command line that cannot be run as written (as in most Unix tools).
constexpr int kUsageExit = 2;

enum class Mode {
  kLocal,   // N ranks on this machine, started by hvdcrun itself
  kMpirun,  // -H or --hostfile: delegated to Open MPI's mpirun
  kSrun,    // --srun: delegated to Slurm's srun inside an allocation
};

struct Options {
  int np = 0;                              // -np / -n
  std::string hosts;                       // -H a:4,b:4
  std::string hostfile;                    // --hostfile
  bool srun = false;                       // --srun
  int timeout_s = 0;                       // --timeout, local mode; 0 = none
  std::vector<std::string> exports;        // -x NAME or NAME=value, in order
  std::vector<std::string> launcher_args;  // --launcher-arg, verbatim to mpirun or srun
  bool allow_run_as_root = false;          // passed to mpirun only when given
  bool oversubscribe = false;              // passed to mpirun
  bool keep_going = false;                 // a failed rank does not stop the others
  bool verbose = false;                    // -v: print what is started
  bool help = false;                       // -h / --help
  bool version = false;                    // --version
  std::vector<std::string> command;        // the program and its arguments
};

// Parses argv. Options come first; the first word that is not an option (or everything after
// `--`) starts the command. Errors name the option and the value; they are usage errors.
Status parse_options(int argc, const char* const* argv, Options* out);

// Checks what parsing cannot: combinations of options and files that must exist. Skipped for
// --help and --version.
Status check_options(const Options& options);

Mode mode_of(const Options& options);

// The full --help text.
const char* usage_text();

}  // namespace hvdc::hvdcrun
