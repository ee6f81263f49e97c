#!/usr/bin/env bash
# Runs one fault case at np 3 (run_fault.sh PROGRAM PHASE) and judges it by the ranks' verdict
# lines, not only by mpirun's exit status; mpirun must not kill the other ranks when one reports
# a failure (orte_abort_on_non_zero_status 0), so that every verdict is printed.
set -uo pipefail
prog=$1 phase=$2
here=$(cd "$(dirname "$0")" && pwd)
out=$(bash "$here/run_mpi.sh" 3 --mca orte_abort_on_non_zero_status 0 "$prog" fault-stop "$phase" 2>&1)
echo "$out"
passes=$(grep -c '^PASS fault\.' <<<"$out")
if grep -q '^FAIL fault\.' <<<"$out"; then echo "FAIL: a rank failed its checks" >&2; exit 1; fi
# Two survivors with three verdicts each, and the resumed rank's one.
want=7
[ "$passes" -ge "$want" ] || { echo "FAIL: $passes of $want verdicts passed" >&2; exit 1; }
echo "fault-$phase: $passes verdicts passed"
