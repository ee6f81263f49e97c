#!/usr/bin/env bash
# The kill case without MPI: 3 ranks meet through the TCP rendezvous store, rank 1 dies (SIGKILL)
# and the survivors must report the typed error and get through hvd_shutdown.
# Usage: run_fault_store.sh PROGRAM   (HVDC_TIMEOUT comes from the environment)
set -uo pipefail
prog=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
for r in 0 1 2; do
  HVDC_RANK=$r HVDC_SIZE=3 HVDC_MASTER_ADDR=127.0.0.1 HVDC_MASTER_PORT=$port \
    HVDC_SECRET=$secret "$prog" fault-stop kill >"$work/r$r" 2>&1 &
done
wait
cat "$work"/r0 "$work"/r2
if grep -q '^FAIL fault\.' "$work"/r0 "$work"/r2; then echo "FAIL: a survivor failed" >&2; exit 1; fi
passes=$(cat "$work"/r0 "$work"/r2 | grep -c '^PASS fault\.')
[ "$passes" -ge 6 ] || { echo "FAIL: $passes of 6 verdicts passed" >&2; exit 1; }
echo "fault-kill-store: $passes verdicts passed"
