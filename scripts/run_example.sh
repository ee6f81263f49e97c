#!/usr/bin/env bash
# The main job: builds hvdc and runs the allreduce example on 3 local processes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -np 3 --oversubscribe --bind-to none build/examples/allreduce
