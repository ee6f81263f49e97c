#!/usr/bin/env bash
# Runs the HVDC.jl tests: run_julia.sh PACKAGE_DIR LIBHVDC WORK_DIR. Exits 77 (skipped) with the
# reason when julia or mpiexec is missing, also under CI=true: no Julia can be installed on the
# project's machines (issue 12 asks for this skip). HVDC_REQUIRE_JULIA=1 makes it a failure.
set -euo pipefail
pkg=$1 lib=$2 work=$3
skip() {
  echo "julia: skipped: $1"
  if [ "${HVDC_REQUIRE_JULIA:-}" = "1" ]; then exit 1; fi
  exit 77
}
command -v julia > /dev/null || skip "no 'julia' interpreter on PATH (none can be installed on this machine)"
command -v mpiexec > /dev/null || skip "no 'mpiexec' on PATH (the tests run under mpiexec -n 2)"
mkdir -p "$work"
# HVDC_LIBRARY is read when HVDC is precompiled: a depot of this build's own keeps a cache made
# for another library out of the way. The trailing ':' keeps the default depots (stdlibs).
export HVDC_LIBRARY=$lib HVDC_JULIA_TEST_DIR=$work JULIA_DEPOT_PATH="$work/depot:"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec julia --startup-file=no --project="$pkg" "$pkg/test/runtests.jl"
