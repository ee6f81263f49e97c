#!/usr/bin/env bash
# compare.sh's two-host rows: one rank in each of two network namespaces joined by a veth (the
# multihost suite's pair), hvdc over UCX/TCP beside Open MPI over TCP (ob1's tcp btl, and pml ucx
# with UCX_TLS=tcp), and the veth's raw TCP bandwidth in the same run: one stream, and both ways
# at once on one connection, from one process on each host as an allreduce's rank sends and
# receives (an allreduce sends both ways, so that is the limit its busbw meets), and for each
# op size its bytes exchanged both ways a round in the best send() size (a burst, as one op
# moves them: on the pair, 1 MiB bursts ran twice the stream's rate).
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

# A host is a namespace and a core, as real hosts do not share their cores: unpinned, both hosts'
# threads and both ends' TCP work share this machine's cores wherever the scheduler puts them,
# and the same sweep measured 1.5 or 3.9 GB/s minutes apart, for hvdc and Open MPI alike
# (docs/performance.md, "Two hosts, a core each"). Host A's processes run on the
# first CPU this script may use, host B's on the second; with fewer than two, or with
# COMPARE_HOSTS_UNPINNED=1 in the environment, unpinned.
allowed_cpus() {
  local part
  for part in $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' ' '); do
    seq "${part%-*}" "${part#*-}"
  done
}
mapfile -t cpu_list < <(allowed_cpus)
pin=()
host_cpu=()
if [ "${COMPARE_HOSTS_UNPINNED:-0}" != 1 ] && [ ${#cpu_list[@]} -ge 2 ]; then
  host_cpu=("${cpu_list[0]}" "${cpu_list[1]}")
  cat >"$work/pin.sh" <<EOF
#!/bin/sh
# Rank r runs on host r (one rank a host): on that host's CPU.
case "\$OMPI_COMM_WORLD_RANK" in 0) cpu=${host_cpu[0]} ;; *) cpu=${host_cpu[1]} ;; esac
exec taskset -c "\$cpu" "\$@"
EOF
  chmod +x "$work/pin.sh"
  pin=("$work/pin.sh")
  echo "hosts A and B run on CPUs ${host_cpu[0]} and ${host_cpu[1]}"
fi

# on_host A|B CMD...: CMD in that host's namespace, on its CPU.
on_host() {
  local ns=$NS_A cpu=${host_cpu[0]:-}
  if [ "$1" = B ]; then ns=$NS_B cpu=${host_cpu[1]:-}; fi
  shift
  if [ -n "$cpu" ]; then
    ip netns exec "$ns" taskset -c "$cpu" "$@"
  else
    ip netns exec "$ns" "$@"
  fi
}

# One rank a host (UCX on TCP only: netns_mpirun).
mpirun_two_hosts() {
  netns_mpirun 1 "$@"
}

# One stream A -> B (the receiver reports), then both ways at once on one connection (each end
# reports what it received), then each swept size exchanged both ways (host B reports).
measure_link() {
  local i=$1 seconds=2
  on_host B "$blast" recv 29611 >"$out/raw/mh-link-oneway-$i.json" &
  local recv_b=$!
  on_host A "$blast" send "$ADDR_B" 29611 $seconds
  wait $recv_b
  on_host B "$blast" duplex-listen 29612 $seconds >"$out/raw/mh-link-bidir-ab-$i.json" &
  local duplex_b=$!
  on_host A "$blast" duplex "$ADDR_B" 29612 $seconds >"$out/raw/mh-link-bidir-ba-$i.json"
  wait $duplex_b
  local size exchange_b
  for size in "${link_sizes[@]}"; do
    on_host B "$blast" exchange-listen 29613 "$size" >"$out/raw/mh-link-exchange-$size-$i.json" &
    exchange_b=$!
    on_host A "$blast" exchange "$ADDR_B" 29613 "$size" >/dev/null
    wait $exchange_b
  done
}

# run_crossing NAME BENCH_FLAG MIN MAX ITERS MPIRUN_ARGS...: one hvdc_bench sweep across the pair
# (BENCH_FLAG --mpi-only for Open MPI alone, or ""); fails unless at least the largest
# allreduce's timed bytes came into host B over the veth.
run_crossing() {
  local name=$1 flag=$2 lo=$3 hi=$4 n=$5
  shift 5
  local before after need
  before=$(veth_b_rx_bytes)
  mpirun_two_hosts "$@" "${pin[@]}" "$bench" ${flag:+"$flag"} -b "$lo" -e "$hi" -f 4 -n "$n" -w 3 \
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
# The sizes the sweeps time (hvdc_bench -f 4 from each sweep's first size).
link_sizes=()
for sweep in "${sweeps[@]}"; do
  read -r _ lo hi _ <<<"$sweep"
  for ((size = $(numfmt --from=iec "$lo"); size <= $(numfmt --from=iec "$hi"); size *= 4)); do
    link_sizes+=("$size")
  done
done

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
