#!/usr/bin/env bash
# Runs a test program under Open MPI: run_mpi.sh NP PROGRAM [ARGS...]
# Root needs the two OMPI_ALLOW variables; more ranks than cores need --oversubscribe; without
# --bind-to none a rank and its engine thread share one core.
set -euo pipefail
np=$1
shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp "$@"
