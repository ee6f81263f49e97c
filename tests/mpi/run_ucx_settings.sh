#!/usr/bin/env bash
# The UCX settings hvdc makes (shared-memory error handling, TCP segment sizes) under each kind
# of UCX_TLS / UCX_NET_DEVICES a user may give: the program must pass, and UCX must never warn
# that a setting found no transport to take it ("invalid configuration").
# Usage: run_ucx_settings.sh RUN_MPI NP PROGRAM
set -uo pipefail
run_mpi=$1 np=$2 prog=$3
passed=0 failed=0
check() {
  local label=$1
  shift
  local out rc=0
  out=$(env "$@" bash "$run_mpi" "$np" "$prog" 2>&1) || rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $label: exit $rc"
    echo "$out" | tail -5
    failed=$((failed + 1))
  elif echo "$out" | grep -q "invalid configuration"; then
    echo "FAIL $label: UCX warned"
    echo "$out" | grep "invalid configuration" | head -2
    failed=$((failed + 1))
  else
    echo "ok   $label"
    passed=$((passed + 1))
  fi
}
check "defaults"
check "UCX_TLS=tcp" UCX_TLS=tcp
check "UCX_TLS=shm,self" UCX_TLS=shm,self
check "UCX_TLS=sm,self" UCX_TLS=sm,self
check "UCX_TLS=^tcp" UCX_TLS=^tcp
check "UCX_TLS=^shm" UCX_TLS=^shm
check "UCX_TLS=^posix,sysv" UCX_TLS=^posix,sysv
check "UCX_NET_DEVICES=lo" UCX_NET_DEVICES=lo
# A device that is no network interface: UCX says so itself, and uses no TCP.
check "UCX_NET_DEVICES=no_such_port:1" UCX_NET_DEVICES=no_such_port:1
check "the user's UCX_TCP_TX_SEG_SIZE" UCX_TCP_TX_SEG_SIZE=16K UCX_TLS=tcp
echo "ucx-settings: $passed passed, $failed failed"
[ $failed -eq 0 ]
