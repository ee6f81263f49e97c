// The --help text: every option, what each rank receives, and the exit status.
#include "tools/hvdcrun/options.h"

namespace hvdc::hvdcrun {

const char* usage_text() {
  return R"(usage: hvdcrun -np N [options] program [arguments...]
       hvdcrun -np N -H host:slots[,host:slots...] [options] program [arguments...]
       hvdcrun -np N --hostfile FILE [options] program [arguments...]
       hvdcrun -np N --srun [options] program [arguments...]

Starts N ranks of an hvdc program.

Modes:
  (default)            N ranks on this machine, started by hvdcrun itself; no MPI needed.
                       Ranks meet through hvdc's TCP store on 127.0.0.1, authenticated by a
                       secret generated for this run.
  -H, --hostfile       Delegates to Open MPI's mpirun (found on PATH), with --bind-to none and
                       --tag-output; hvdc then finds its ranks from Open MPI's variables.
  --srun               Delegates to Slurm's srun inside an allocation (SLURM_JOB_ID set); hvdc
                       finds its ranks from Slurm's variables and meets through its TCP store.

Options:
  -np N, -n N          Number of ranks to start (required).
  -H, --host LIST      Hosts and slot counts, e.g. a:4,b:4 (mpirun's -H).
  --hostfile FILE      An Open MPI hostfile (lines like "a slots=4").
  --srun               Launch with srun -n N inside the current Slurm allocation.
  -x NAME[=VALUE]      Export NAME (with VALUE, or its current value) to every rank. Repeatable.
                       In local mode every variable is inherited anyway, and the variables
                       hvdcrun sets (below) cannot be overridden.
  --timeout SECONDS    Local mode: stop every rank after SECONDS and exit 124.
  --launcher-arg ARG   Pass ARG verbatim to mpirun or srun, after hvdcrun's own arguments
                       (so it can override them, e.g. --launcher-arg=--cpu-bind=cores).
                       Repeatable; one argument per use.
  --oversubscribe      mpirun: allow more ranks than slots.
  --allow-run-as-root  mpirun: passed on only when given here (Open MPI refuses root otherwise;
                       OMPI_ALLOW_RUN_AS_ROOT=1 with OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 also works).
  --keep-going         A rank that fails or dies does not stop the others (they get hvdc's
                       typed error and exit on their own); the exit status is still the first
                       failed rank's. mpirun: --mca orte_enable_recovery 1 --mca
                       orte_abort_on_non_zero_status 0; srun: --kill-on-bad-exit=0.
  -v, --verbose        Print the command that is started (mpirun, srun) or each rank's pid.
  -h, --help           Print this help and exit.
  --version            Print the version and exit.
  --                   Ends the options; the next word is the program even if it starts with '-'.
Long options also take --option=value.

Local mode:
  Every rank gets HVDC_RANK, HVDC_SIZE, HVDC_LOCAL_RANK, HVDC_LOCAL_SIZE,
  HVDC_MASTER_ADDR=127.0.0.1, HVDC_MASTER_PORT (a free port picked by hvdcrun), HVDC_SECRET (64
  hex digits from /dev/urandom) and HVDC_BOOTSTRAP=store, on top of hvdcrun's own environment.
  Each output line is prefixed like Open MPI's --tag-output: "[1,R]<stdout>:" or "[1,R]<stderr>:"
  for rank R, and goes to hvdcrun's stdout or stderr. A last line without a newline gets one.
  Rank 0 reads hvdcrun's stdin unless it is a terminal; the other ranks read /dev/null.
  When a rank exits with a non-zero code or is killed by a signal, the others get SIGTERM, then
  SIGKILL 3 s later. SIGINT, SIGTERM and SIGHUP sent to hvdcrun are forwarded to every rank
  (each rank runs in its own process group, and its whole group gets the signal); ranks still
  running 3 s later get SIGKILL. A second signal kills every rank at once.

mpirun mode (-H, --hostfile):
  Runs: mpirun -np N (-H LIST | --hostfile FILE) --bind-to none --tag-output [--oversubscribe]
  [--allow-run-as-root] -x HVDC_SECRET -x NAME... [launcher args] program [arguments...]
  where each NAME is a variable set here that starts with HVDC_, HOROVOD_, UCX_ or NCCL_ (except
  the per-rank HVDC_RANK, HVDC_SIZE, HVDC_LOCAL_RANK, HVDC_LOCAL_SIZE), PATH and LD_LIBRARY_PATH,
  plus every -x given here. HVDC_SECRET is generated and passed by name, never on the command
  line. hvdcrun replaces itself with mpirun, so mpirun's exit status is hvdcrun's.

srun mode (--srun):
  Runs: srun -n N --export=ALL --kill-on-bad-exit=1 --cpu-bind=none --label [launcher args]
  program [arguments...] with HVDC_SECRET (generated), HVDC_BOOTSTRAP=store, HVDC_MASTER_ADDR
  (unless set: the first host of SLURM_JOB_NODELIST, where srun places rank 0 by default) and
  HVDC_MASTER_PORT (unless set: a free port when hvdcrun runs on that host, else a random port
  from 20000 to 39999) in the environment, and HVDC_RANK, HVDC_SIZE, HVDC_LOCAL_RANK and
  HVDC_LOCAL_SIZE removed so that each task takes its ids from Slurm. --export=ALL overrides an
  sbatch --export=NONE; --kill-on-bad-exit=1 stops the step when a task fails.

Exit status:
  0 when every rank exits 0; else the exit code of the first rank that failed, 128 + N when it
  was killed by signal N; 130 after SIGINT (143 after SIGTERM, 129 after SIGHUP); 124 after
  --timeout; 127 when the program or launcher cannot be found; 2 for a usage error.

Examples:
  hvdcrun -np 4 python train.py
  hvdcrun -np 8 -H node1:4,node2:4 python train.py
  salloc -N 2 --ntasks-per-node=4 hvdcrun -np 8 --srun python train.py
)";
}

}  // namespace hvdc::hvdcrun
