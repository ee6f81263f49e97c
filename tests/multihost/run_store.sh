#!/usr/bin/env bash
# Multi-host suite through the TCP rendezvous store, without MPI: 2 ranks on each of two "hosts"
# (network namespaces), rank 0's store bound to host A's veth (HVDC_IFACE). Then a rank with the
# wrong secret must be refused while the store keeps serving the right ones.
# Usage: run_store.sh PROGRAM
set -euo pipefail
prog=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/netns.sh"
netns_require_or_skip
netns_up

port=29517
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
large=$((4 << 20))

# start_rank RANK SIZE NAMESPACE HOST SECRET OUTFILE [ARGS...]
start_rank() {
  local rank=$1 size=$2 ns=$3 host=$4 key=$5 out=$6
  shift 6
  ip netns exec "$ns" env HVDC_RANK="$rank" HVDC_SIZE="$size" HVDC_MASTER_ADDR="$ADDR_A" \
    HVDC_MASTER_PORT="$port" HVDC_SECRET="$key" HVDC_IFACE="$VETH_A" HVDC_HOSTNAME="$host" \
    HVDC_RENDEZVOUS_TIMEOUT=20 UCX_TLS=tcp "$prog" "$@" >"$out" 2>&1 &
}

rx_before=$(veth_b_rx_bytes)
start_rank 0 4 "$NS_A" host-a "$secret" "$work/r0" 2 "$large"
start_rank 1 4 "$NS_A" host-a "$secret" "$work/r1" 2 "$large"
start_rank 2 4 "$NS_B" host-b "$secret" "$work/r2" 2 "$large"
start_rank 3 4 "$NS_B" host-b "$secret" "$work/r3" 2 "$large"
status=0
wait || status=$?
for r in 0 1 2 3; do sed "s/^/[rank $r] /" "$work/r$r"; done
[ "$status" = 0 ] || { echo "FAIL: a rank exited with $status" >&2; exit 1; }
[ "$(cat "$work"/r? | grep -c ': ok$')" = 4 ] || { echo "FAIL: not every rank reported ok" >&2; exit 1; }
crossed=$(($(veth_b_rx_bytes) - rx_before))
echo "veth into host B: $crossed bytes (the large allreduce alone is $((large * 4)) bytes)"
[ "$crossed" -ge $((large * 4)) ] || { echo "FAIL: the allreduce did not cross the veth" >&2; exit 1; }

# Wrong secret: rank 1 (host B) is refused; rank 0 gives up waiting for it. Both fail within the
# rendezvous timeout, rank 0's log names the refused peer.
ip netns exec "$NS_A" env HVDC_RANK=0 HVDC_SIZE=2 HVDC_MASTER_ADDR="$ADDR_A" \
  HVDC_MASTER_PORT="$port" HVDC_SECRET="$secret" HVDC_IFACE="$VETH_A" HVDC_LOG_LEVEL=info \
  HVDC_RENDEZVOUS_TIMEOUT=3 UCX_TLS=tcp "$prog" 1 1000 >"$work/s0" 2>&1 &
pid0=$!
rc1=0
ip netns exec "$NS_B" env HVDC_RANK=1 HVDC_SIZE=2 HVDC_MASTER_ADDR="$ADDR_A" \
  HVDC_MASTER_PORT="$port" HVDC_SECRET="not-the-secret" HVDC_RENDEZVOUS_TIMEOUT=3 \
  UCX_TLS=tcp "$prog" 1 1000 >"$work/s1" 2>&1 || rc1=$?
rc0=0
wait "$pid0" || rc0=$?
sed 's/^/[good rank 0] /' "$work/s0"
sed 's/^/[wrong secret] /' "$work/s1"
[ "$rc1" != 0 ] || { echo "FAIL: the rank with the wrong secret joined" >&2; exit 1; }
[ "$rc0" != 0 ] || { echo "FAIL: rank 0 completed without its peer" >&2; exit 1; }
grep -q "refused" "$work/s0" || { echo "FAIL: rank 0's store did not log the refusal" >&2; exit 1; }
grep -q "listening on $ADDR_A:$port" "$work/s0" ||
  { echo "FAIL: the store did not bind to $VETH_A's address" >&2; exit 1; }
echo "multihost-store: ok"
