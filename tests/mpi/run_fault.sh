#!/usr/bin/env bash
# Runs one fault case at np 3 (run_fault.sh PROGRAM PHASE) and judges it by the ranks' verdict
# lines, not by mpirun's exit status: in the kill case a rank dies by design. mpirun must not kill
# the others when one dies or fails (orte_abort_on_non_zero_status 0), so every verdict prints.
set -uo pipefail
prog=$1 phase=$2
here=$(cd "$(dirname "$0")" && pwd)
out=$(bash "$here/run_mpi.sh" 3 --mca orte_abort_on_non_zero_status 0 "$prog" fault-stop "$phase" 2>&1)
echo "$out"
passes=$(grep -c '^PASS fault\.' <<<"$out")
if grep -q '^FAIL fault\.' <<<"$out"; then echo "FAIL: a rank failed its checks" >&2; exit 1; fi
# Two survivors with three verdicts each, and the resumed rank's one (none from a killed rank).
want=7
[ "$phase" != kill ] || want=6
[ "$passes" -ge "$want" ] || { echo "FAIL: $passes of $want verdicts passed" >&2; exit 1; }
echo "fault-$phase: $passes verdicts passed"
