#!/usr/bin/env bash
# Multi-host suite through Open MPI: 2 ranks on each of two "hosts" (network namespaces), started
# by mpirun in host A with a remote-launch agent that enters host B's namespace instead of ssh.
# Checks the topology, every collective, that the large allreduce crossed the veth, and that the
# ranks found they reach the other host over TCP alone (UCX_TLS=tcp), which cuts the ring's
# messages between hosts to HVDC_TCP_SEGMENT_BYTES (rank 0 says so at level info).
# Usage: run_mpirun.sh PROGRAM
set -euo pipefail
prog=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns.sh"
netns_require_or_skip
netns_up_for_mpirun

large=$((4 << 20))  # float32 elements: 16 MiB
rx_before=$(veth_b_rx_bytes)
# Two ranks a host: the large allreduce runs hierarchically (a ring of each host's chunk across).
netns_mpirun 2 --mca pml ob1 --mca btl self,tcp -x HVDC_LOG_LEVEL=info \
  "$prog" 2 "$large" 2>&1 | tee "$work/out"
rx_after=$(veth_b_rx_bytes)

ok=$(grep -c ': ok$' "$work/out" || true)
[ "$ok" = 4 ] || { echo "FAIL: $ok of 4 ranks reported ok" >&2; exit 1; }
hosts=$(grep -o 'netns [0-9]*' "$work/out" | sort -u | wc -l)
[ "$hosts" = 2 ] || { echo "FAIL: ranks ran in $hosts network namespaces, not 2" >&2; exit 1; }
crossed=$((rx_after - rx_before))
need=$((large * 4))
echo "veth into host B: $crossed bytes (the large allreduce alone is $need bytes)"
[ "$crossed" -ge "$need" ] || { echo "FAIL: less than one allreduce crossed the veth" >&2; exit 1; }
# One rank a host: the ring itself across the hosts, in pieces both ways, at a size whose
# chunks end mid-piece.
netns_mpirun 1 --mca pml ob1 --mca btl self,tcp "$prog" 1 1000003 | tee "$work/out1"
ok=$(grep -c ': ok$' "$work/out1" || true)
[ "$ok" = 2 ] || { echo "FAIL: one rank a host: $ok of 2 ranks reported ok" >&2; exit 1; }
said=$(grep -c 'reached over TCP alone: the ring sends them pieces of [0-9][0-9]* bytes' "$work/out" || true)
[ "$said" = 1 ] || { echo "FAIL: rank 0 said $said times that other hosts are reached over TCP" >&2; exit 1; }
echo "multihost-mpirun: ok"
