#!/usr/bin/env bash
# compare.sh's two-host rows: one rank in each of two network namespaces joined by a veth (the
# multihost suite's pair), hvdc over UCX/TCP beside Open MPI over TCP (ob1's tcp btl, and pml ucx
# with UCX_TLS=tcp), and the veth's raw TCP bandwidth in the same run: one stream, and one stream
# each way at once (an allreduce sends both ways, so that is the limit its busbw meets).
# Every run checks that its bytes crossed the veth. Needs root; exits 77 with the reason where
# namespaces cannot be made.
# Usage: compare_multihost.sh OUT_DIR RUNS MIN_BYTES MAX_BYTES ITERS
set -euo pipefail
out=$1 runs=$2 min=$3 max=$4 iters=$5
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/build/bench/hvdc_bench
blast=$root/build/bench/tcp_blast
# shellcheck source-path=SCRIPTDIR source=../tests/multihost/netns.sh
source "$root/tests/multihost/netns.sh"
(netns_require_or_skip) || exit $?
# mpirun starts rank 1 through an agent that enters host B's namespace instead of ssh.
netns_up_for_mpirun
work=${work:?netns_up sets the scratch folder}

# One rank a host (UCX on TCP only: netns_mpirun).
mpirun_two_hosts() {
  netns_mpirun 1 "$@"
}

# One stream A -> B, then one each way at once; the receivers report.
measure_link() {
  local i=$1 seconds=2
  ip netns exec "$NS_B" "$blast" recv 29611 >"$out/raw/mh-link-oneway-$i.json" &
  local recv_b=$!
  ip netns exec "$NS_A" "$blast" send "$ADDR_B" 29611 $seconds
  wait $recv_b
  ip netns exec "$NS_B" "$blast" recv 29612 >"$out/raw/mh-link-bidir-ab-$i.json" &
  recv_b=$!
  ip netns exec "$NS_A" "$blast" recv 29613 >"$out/raw/mh-link-bidir-ba-$i.json" &
  local recv_a=$!
  ip netns exec "$NS_A" "$blast" send "$ADDR_B" 29612 $seconds &
  local send_a=$!
  ip netns exec "$NS_B" "$blast" send "$ADDR_A" 29613 $seconds
  wait $send_a $recv_a $recv_b
}

# run_crossing NAME BENCH_FLAG MIN MAX ITERS MPIRUN_ARGS...: one hvdc_bench sweep across the pair
# (BENCH_FLAG --mpi-only for Open MPI alone, or ""); fails unless at least the largest
# allreduce's timed bytes came into host B over the veth.
run_crossing() {
  local name=$1 flag=$2 lo=$3 hi=$4 n=$5
  shift 5
  local before after need
  before=$(veth_b_rx_bytes)
  mpirun_two_hosts "$@" "$bench" ${flag:+"$flag"} -b "$lo" -e "$hi" -f 4 -n "$n" -w 3 \
    --json "$out/raw/$name.json"
  after=$(veth_b_rx_bytes)
  need=$(($(numfmt --from=iec "$hi") * n))
  echo "$name: $((after - before)) bytes into host B over the veth (at least $need expected)"
  if [ $((after - before)) -lt "$need" ]; then
    echo "FAIL: $name's allreduces did not cross the veth" >&2
    exit 1
  fi
}

# Up to 16 MiB a sweep of ITERS ops lasts a few milliseconds, about one scheduler tick, and
# whole sweeps came out 2x apart for hvdc and Open MPI alike: those sizes run 5x the ops, in a
# sweep of their own; 64 MiB and up keep ITERS.
max_bytes=$(numfmt --from=iec "$max")
mid_max=$((max_bytes < 16 << 20 ? max_bytes : 16 << 20))
sweeps=("mid $min $mid_max $((iters * 5))")
if [ "$max_bytes" -ge $((64 << 20)) ]; then sweeps+=("large 64M $max $iters"); fi

# crossing_sweeps NAME BENCH_FLAG MPIRUN_ARGS...: every sweep above, as NAME-SWEEP-I.json.
crossing_sweeps() {
  local name=$1 flag=$2 sweep part lo hi n
  shift 2
  for sweep in "${sweeps[@]}"; do
    read -r part lo hi n <<<"$sweep"
    run_crossing "$name-$part-$i" "$flag" "$lo" "$hi" "$n" "$@"
  done
}

for i in $(seq 1 "$runs"); do
  echo "-- two hosts, invocation $i"
  measure_link "$i"
  crossing_sweeps mh-hvdc "" --mca pml ob1 --mca btl self,tcp
  crossing_sweeps mh-ob1 --mpi-only --mca pml ob1 --mca btl self,tcp
  crossing_sweeps mh-ucx --mpi-only --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
done
