#!/usr/bin/env bash
# hvdc beside Open MPI on this machine, in one run: np 2 float32 sum allreduce against Open MPI
# with ob1 and with pml ucx, the 4 KiB round trip, the ResNet-50 and BERT-base gradient steps,
# the two-host netns pair, and the limits (zero-copy shared memory, memory bandwidth, the veth's
# raw TCP bandwidth) measured in the same run. Each figure is the median of --runs invocations,
# interleaved so that a noisy minute spreads over every column. Prints the Markdown table of
# DESIGN.md section 6's targets and leaves every raw number beside it.
#
# Usage: bench/compare.sh [--quick] [--only latency|bw|model|multihost]... [--runs N]
#                         [--out DIR] [--docs]
#   --quick   1 invocation, sizes up to 64 MiB, fewer iterations and steps
#   --only    measure only these parts (repeatable); the table shows what was measured
#   --runs N  invocations per figure (default 3; --quick sets 1)
#   --out DIR where logs, raw JSON, compare.{md,json,csv} and allreduce_np2.svg go
#             (default build/compare/<UTC time>)
#   --docs    also copy the table to docs/perf/compare-<date>.md, its raw numbers to
#             docs/perf/compare-<date>.json and the plot to docs/img/allreduce_np2.svg
# Run it as root for the two-host rows (network namespaces); elsewhere they are skipped with
# the reason. Other jobs on the machine make every figure noisy: run it on a quiet machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export COMPARE_COMMAND="bench/compare.sh${*:+ $*}"

usage() { sed -n '9,20p' "$0" | sed 's/^# \{0,1\}//'; }

quick=0
runs=""
out=""
docs=0
parts=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --docs) docs=1 ;;
    --runs)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "compare.sh: --runs needs a count >= 1, got '${2:-}'" >&2; exit 2; }
      runs=$2
      shift ;;
    --out)
      [ -n "${2:-}" ] || { echo "compare.sh: --out needs a directory" >&2; exit 2; }
      out=$2
      shift ;;
    --only)
      case ${2:-} in
        latency | bw | model | multihost) parts+=("$2") ;;
        *) echo "compare.sh: --only takes latency, bw, model or multihost, got '${2:-}'" >&2; exit 2 ;;
      esac
      shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ ${#parts[@]} -gt 0 ] || parts=(latency bw model multihost)
[ -n "$runs" ] || { [ $quick = 1 ] && runs=1 || runs=3; }
# The run's date is the day it started (a run may cross midnight UTC; the table says when).
started=$(date -u +%Y-%m-%d)
out=${out:-build/compare/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out/raw" "$out/logs"
out=$(cd "$out" && pwd)

wants() {
  local p
  for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}

# What one run measures. Small messages get many iterations (a few us each), large ones few;
# 4 MiB (a few hundred us) gets its own count, so that one scheduler hiccup does not decide it
# (shm_limit times it over 512 ops).
if [ $quick = 1 ]; then
  max_bytes=64M large_iters=5 mid_iters=50 small_iters=100 model_steps=5 model_warmup=1
  mh_iters=3
else
  max_bytes=256M large_iters=20 mid_iters=200 small_iters=500 model_steps=20 model_warmup=3
  mh_iters=10
fi

build() {
  if [ ! -f build/build.ninja ]; then
    local opts=()
    if [ -d /usr/local/cuda ]; then opts+=(-Dcuda=enabled -Dnccl=enabled); fi
    meson setup build "${opts[@]}"
  fi
  meson compile -C build bench/shm_limit bench/tcp_blast bench/line_latency
  if ! meson compile -C build bench/hvdc_bench bench/hvdc_model_step src/hvdc_mpi; then
    echo "compare.sh: the MPI benchmarks did not build (is Open MPI installed? scripts/setup.sh)" >&2
    exit 1
  fi
}
echo "== building (meson in ./build)"
build >"$out/logs/build.log" 2>&1 || { tail -20 "$out/logs/build.log" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "compare.sh: mpirun not found (scripts/setup.sh)" >&2; exit 1; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pml_ob1=(--mca pml ob1)
pml_ucx=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
bench=build/bench/hvdc_bench
model_step=build/bench/hvdc_model_step

# step NAME CMD...: runs one measurement with its output in logs/NAME.log. A failure is
# recorded in failures.txt and its cells say so; the rest of the run goes on. Before it, the
# two CPUs' cache-line round trip (raw/line-NAME.json): the host of a VM moves its virtual CPUs,
# and the cost of every meeting in shared memory changes with it (bench/line_latency.cc).
step() {
  local name=$1
  shift
  build/bench/line_latency --json "$out/raw/line-$name.json" >/dev/null 2>&1 || true
  printf '   %-28s' "$name"
  local start=$SECONDS
  if "$@" >"$out/logs/$name.log" 2>&1; then
    echo "ok ($((SECONDS - start)) s)"
  else
    local rc=$?
    echo "FAILED (exit $rc, logs/$name.log)"
    echo "$name exit $rc: $(tail -3 "$out/logs/$name.log" | tr '\n' ' ')" >>"$out/failures.txt"
  fi
}

mpirun2() { mpirun -np 2 --bind-to none --oversubscribe "$@"; }

# hvdc (MPI only bootstraps it) and Open MPI alone under each pml, on the same program and
# buffers. The 4 KiB round trip comes with every hvdc_bench run.
one_host_allreduce() {
  local i=$1 ranges=()
  wants bw && ranges+=("small 64K 1M $small_iters 50" "mid 4M 4M $mid_iters 20"
    "large 16M $max_bytes $large_iters 5")
  [ ${#ranges[@]} -gt 0 ] || ranges=("small 4K 4K $small_iters 50")
  local r name min max iters warm
  for r in "${ranges[@]}"; do
    read -r name min max iters warm <<<"$r"
    local sweep=(-b "$min" -e "$max" -f 4 -n "$iters" -w "$warm")
    step "hvdc-$name-$i" mpirun2 "${pml_ob1[@]}" $bench "${sweep[@]}" \
      --json "$out/raw/hvdc-$name-$i.json"
    step "ob1-$name-$i" mpirun2 "${pml_ob1[@]}" $bench --mpi-only "${sweep[@]}" \
      --json "$out/raw/ob1-$name-$i.json"
    step "ucx-$name-$i" mpirun2 "${pml_ucx[@]}" $bench --mpi-only "${sweep[@]}" \
      --json "$out/raw/ucx-$name-$i.json"
    # hvd_mem_alloc buffers reduced in place: the figure to hold against the zero-copy limit,
    # measured right after it over the same sizes: the host moves a VM's CPUs within minutes
    # (bench/line_latency.cc), and a limit taken at the end of the invocation was often taken in
    # another phase.
    if wants bw; then
      step "shared-$name-$i" mpirun2 "${pml_ob1[@]}" $bench --shared --in-place "${sweep[@]}" \
        --json "$out/raw/shared-$name-$i.json"
      step "limit-$name-$i" build/bench/shm_limit -b "$min" -e "$max" \
        --json "$out/raw/limit-$name-$i.json"
    fi
  done
}

# hvdc (heap gradients, and hvd_mem_alloc ones) runs once, beside the MPI variants under ob1;
# pml ucx runs the MPI variants again.
model_steps() {
  local i=$1 model
  local common=(--steps "$model_steps" --warmup "$model_warmup")
  for model in resnet50 bert_base; do
    step "model-$model-ob1-$i" mpirun2 "${pml_ob1[@]}" $model_step --model $model "${common[@]}" \
      --variants hvdc,hvdc-shared,limit-staged,mpi-allreduce,mpi-iallreduce,mpi-packed \
      --json "$out/raw/model-$model-ob1-$i.json"
    step "model-$model-ucx-$i" mpirun2 "${pml_ucx[@]}" $model_step --model $model "${common[@]}" \
      --variants mpi-allreduce,mpi-iallreduce,mpi-packed \
      --json "$out/raw/model-$model-ucx-$i.json"
  done
}

python3 bench/compare_report.py machine "$out" "${parts[@]}"
echo "== $runs invocation(s) of: ${parts[*]}; results in $out"
for i in $(seq 1 "$runs"); do
  echo "-- invocation $i of $runs"
  if wants latency || wants bw; then one_host_allreduce "$i"; fi
  if wants model; then model_steps "$i"; fi
done
if wants multihost; then
  echo "-- two hosts (netns pair), $runs invocation(s)"
  rc=0
  bash bench/compare_multihost.sh "$out" "$runs" 1M "$max_bytes" "$mh_iters" \
    >"$out/logs/multihost.log" 2>&1 || rc=$?
  if [ $rc = 77 ]; then
    echo "   skipped: $(grep -m1 SKIP "$out/logs/multihost.log" || tail -1 "$out/logs/multihost.log")"
    grep -m1 SKIP "$out/logs/multihost.log" >"$out/raw/multihost-skipped.txt" || true
  elif [ $rc != 0 ]; then
    echo "   FAILED (exit $rc, logs/multihost.log)"
    echo "multihost exit $rc: $(tail -3 "$out/logs/multihost.log" | tr '\n' ' ')" >>"$out/failures.txt"
  else
    echo "   ok"
  fi
fi

echo "== table (medians of $runs)"
python3 bench/compare_report.py report "$out"
if wants bw; then
  python3 bench/plot_allreduce.py "$out/compare.json" "$out/allreduce_np2.svg"
fi
if [ $docs = 1 ]; then
  mkdir -p docs/perf docs/img
  stem="docs/perf/compare-$started"
  cp "$out/compare.md" "$stem.md"
  cp "$out/compare.json" "$stem.json"
  if [ -f "$out/allreduce_np2.svg" ]; then cp "$out/allreduce_np2.svg" docs/img/allreduce_np2.svg; fi
  echo "copied to $stem.md, $stem.json and docs/img/allreduce_np2.svg"
fi
if [ -s "$out/failures.txt" ]; then
  echo "compare.sh: some measurements failed (their cells say so):" >&2
  cat "$out/failures.txt" >&2
  exit 1
fi
