#!/usr/bin/env bash
# Runs one fault case and judges it by the ranks' lines, not by the launcher's exit status (the
# culprit may die by design): every rank expected to report must print "DONE rank R: 0 failed"
# and no rank may print a FAIL line.
# Usage: run_case.sh mpirun|hvdcrun NP CASE PROGRAM HVDCRUN
#  - mpirun: Open MPI with orte_enable_recovery 1 and orte_abort_on_non_zero_status 0, so that
#    the launcher does not kill the survivors when the culprit dies, fails or exits without
#    MPI_Finalize;
#  - hvdcrun: its local mode (TCP store, no MPI) with --keep-going, the same for hvdcrun.
# RUN_CASE_EXPECT in the environment names text the run must print as well.
set -uo pipefail
launcher=$1 np=$2 case=$3 prog=$4 hvdcrun=$5
here=$(cd "$(dirname "$0")" && pwd)
case $launcher in
  mpirun)
    run=(bash "$here/../mpi/run_mpi.sh" "$np" --mca orte_enable_recovery 1
      --mca orte_abort_on_non_zero_status 0 "$prog" "$case") ;;
  hvdcrun) run=("$hvdcrun" -np "$np" --keep-going "$prog" "$case") ;;
  *) echo "run_case.sh: unknown launcher '$launcher'" >&2; exit 2 ;;
esac
# The culprit of kill-* and exit reports nothing; rank 1 is the culprit of those cases.
reporters=()
for ((r = 0; r < np; ++r)); do
  case $case in kill-* | exit) [ $r -eq 1 ] && continue ;; esac
  reporters+=("$r")
done
start=$SECONDS
out=$(timeout 100 "${run[@]}" 2>&1)
rc=$?
echo "$out"
echo "run_case: $launcher np $np $case: launcher exit $rc after $((SECONDS - start)) s"
status=0
if grep -q 'FAIL fault\.' <<<"$out"; then echo "FAIL: a rank failed its checks" >&2; status=1; fi
for r in "${reporters[@]}"; do
  if ! grep -Eq "DONE rank $r: 0 failed" <<<"$out"; then
    echo "FAIL: rank $r did not finish with all its checks passed" >&2
    status=1
  fi
done
# RUN_CASE_EXPECT, where set: text the run must print (a sign that it took the path it tests).
if [ -n "${RUN_CASE_EXPECT:-}" ] && ! grep -qF "$RUN_CASE_EXPECT" <<<"$out"; then
  echo "FAIL: the run never printed '$RUN_CASE_EXPECT'" >&2
  status=1
fi
[ $rc -ne 124 ] || { echo "FAIL: the job did not end within 100 s" >&2; status=1; }
exit $status
