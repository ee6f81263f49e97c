#!/usr/bin/env bash
# Two hosts of two ranks each (the multihost suite's network-namespace pair, UCX over TCP): the
# hierarchical allreduce (HVDC_HIERARCHICAL_ALLREDUCE=1, the default) beside one ring through all
# four ranks (=0) and Open MPI's ob1 over TCP, interleaved RUNS times; prints the median busbw
# (n = 4) per size. Within a namespace UCX also uses TCP (over loopback): with UCX_TLS=tcp the
# ranks of the two namespaces cannot reach each other through shared memory instead of the veth.
# Needs root and a build in ./build; exits 77 where namespaces cannot be made.
# Usage: bench/compare_hierarchical.sh [RUNS]
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/build/bench/hvdc_bench
# shellcheck source-path=SCRIPTDIR source=../tests/multihost/netns.sh
source "$root/tests/multihost/netns.sh"
(netns_require_or_skip) || exit $?
netns_up_for_mpirun
work=${work:?netns_up sets the scratch folder}

two_by_two() {
  netns_mpirun 2 --oversubscribe --mca pml ob1 --mca btl self,tcp "$@"
}

sweep=(-b 4M -e 64M -f 4 -n 10 -w 2)
results=$work/results
: >"$results"
for i in $(seq 1 "$runs"); do
  for setting in 1 0; do
    label=$([ $setting = 1 ] && echo hierarchical || echo ring)
    two_by_two -x HVDC_HIERARCHICAL_ALLREDUCE=$setting "$bench" "${sweep[@]}" |
      awk -v l="$label" 'NF == 5 && $1 + 0 > 0 && $5 == 0 {print l, $1, $4}' >>"$results"
  done
  two_by_two "$bench" --mpi-only "${sweep[@]}" |
    awk 'NF == 4 && $1 + 0 > 0 && $2 == 0 {print "ob1", $1, $4}' >>"$results"
done
python3 - "$results" "$runs" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, size, busbw = line.split()
    rows[(int(size), label)].append(float(busbw))
print("| size | hierarchical | one ring | Open MPI ob1 | hierarchical / ring |")
print("|---|---|---|---|---|")
for size in sorted({s for s, _ in rows}):
    med = {l: statistics.median(rows[(size, l)]) for l in ("hierarchical", "ring", "ob1")
           if rows.get((size, l))}
    ratio = med["hierarchical"] / med["ring"] if "ring" in med and "hierarchical" in med else 0
    print("| %d MiB | %s | %s | %s | %.2fx |" % (size >> 20, *("%.2f" % med.get(l, 0) for l in
          ("hierarchical", "ring", "ob1")), ratio))
print("\nbusbw (GB/s, n = 4) medians of %s runs, each size's wrong-element count 0" % sys.argv[2])
PY
