// hvdcrun: starts the ranks of an hvdc job. `hvdcrun -np N prog args...` runs N ranks on this
// machine with no MPI; -H / --hostfile delegate to Open MPI's mpirun and --srun to Slurm's srun.
// `hvdcrun --help` is the reference.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "hvdc_config.h"
#include "tools/hvdcrun/delegate.h"
#include "tools/hvdcrun/local_job.h"
#include "tools/hvdcrun/options.h"

namespace {

// A closed stdin, stdout or stderr would be reused by the first pipe hvdcrun opens, and the
// ranks' output would go astray.
void open_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) == -1) {
      const int null_fd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (null_fd >= 0 && null_fd != fd) {
        dup2(null_fd, fd);
        close(null_fd);
      }
    }
  }
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "hvdcrun: %s\nRun 'hvdcrun --help' for usage.\n", message.c_str());
  return hvdc::hvdcrun::kUsageExit;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hvdc::hvdcrun;
  open_standard_descriptors();
  Options options;
  Status st = parse_options(argc, argv, &options);
  if (!st.is_ok()) return usage_error(st.message());
  if (options.help) {
    std::fputs(usage_text(), stdout);
    return 0;
  }
  if (options.version) {
    std::printf("hvdcrun (hvdc %s)\n", HVDC_VERSION_STRING);
    return 0;
  }
  st = check_options(options);
  if (!st.is_ok()) return usage_error(st.message());
  switch (mode_of(options)) {
    case Mode::kMpirun:
      return exec_mpirun(options);
    case Mode::kSrun:
      return exec_srun(options);
    case Mode::kLocal:
      break;
  }
  return run_local_job(options);
}
