#!/usr/bin/env bash
# Sanitizer builds without CUDA: build-asan (AddressSanitizer + UndefinedBehaviorSanitizer, with
# LeakSanitizer) and build-tsan (ThreadSanitizer). Each runs the unit suite and the mpi suite's
# reduced matrix (tests/mpi mode "reduced": float32, bfloat16, int32, uint8; every op; sizes
# {0, 1, np+1, 64 Ki+1}) at np 2 and 3; the ASan build also runs mode "bad-input" at np 2 (bad
# arguments must not leak). Builds only the programs it runs, under nice. Prints
# "sanitizers: N passed, M failed"; a failed run prints its first sanitizer report (the whole
# output stays in BUILD/sanitizer-logs/). Suppressions, third-party code only: tests/sanitizers/.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
supp=$root/tests/sanitizers
targets=(src/libhvdc_mpi.so tests/unit/unit_tests tests/mpi/hvdc_mpi_tests)
passed=0 failed=0
# A report that did not change an exit status still fails the run.
reports='ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|runtime error:'

# build DIR SANITIZERS [MESON OPTIONS...]: configures (once) and builds the programs; returns
# nonzero on failure.
build() {
  local dir=$1 sanitize=$2 out
  shift 2
  # werror off: sanitizer instrumentation can bring warnings that the ordinary (-Werror) build
  # does not have; they are not what these builds check. -O1 with line tables only (-g1):
  # reports keep their functions, files and lines, and the two builds compile in half the time
  # of -O2 -g (25 s against 13 s for core/engine.cc), which a fresh machine without a compiler
  # cache pays in full. The ASan build's test programs compile at -O0 (tests/meson.build).
  local opts=(-Db_sanitize="$sanitize" -Db_lundef=false -Dcuda=disabled -Dnccl=disabled
    -Doptimization=1 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1 -Dwerror=false "$@")
  if [ -f "$dir/build.ninja" ]; then
    out=$(meson configure "$dir" "${opts[@]}" 2>&1)  # an older configuration catches up
  else
    out=$(nice meson setup "$dir" "${opts[@]}" 2>&1)
  fi || { echo "$out" | tail -20; return 1; }
  out=$(nice ninja -C "$dir" "${targets[@]}" 2>&1) || { echo "$out" | tail -40; return 1; }
}

# run NAME LOG COMMAND...: one counted run; its output goes to LOG.
run() {
  local name=$1 log=$2 rc=0
  shift 2
  timeout 900 "$@" >"$log" 2>&1 || rc=$?
  if [ $rc -eq 0 ] && ! grep -Eq "$reports" "$log"; then
    passed=$((passed + 1))
    echo "sanitizers: passed: $name"
  else
    failed=$((failed + 1))
    echo "sanitizers: failed: $name (exit $rc; log $log)"
    if grep -Eq "$reports" "$log"; then
      grep -Em1 -A40 "$reports" "$log"
    else
      tail -30 "$log"
    fi
  fi
}

# suite DIR LABEL [MODE...]: the unit suite, the reduced mpi matrix at np 2 and 3, the allreduces
# across two pretended hosts of two ranks (mode hierarchical), and each further mpi MODE at np 2.
suite() {
  local dir=$1 label=$2 logs=$1/sanitizer-logs np mode
  shift 2
  mkdir -p "$logs"
  run "$label unit" "$logs/unit.log" "$dir/tests/unit/unit_tests"
  for np in 2 3; do
    run "$label mpi reduced np$np" "$logs/mpi-np$np.log" \
      bash tests/mpi/run_mpi.sh $np "$dir/tests/mpi/hvdc_mpi_tests" reduced
  done
  run "$label mpi hierarchical np4" "$logs/mpi-hierarchical-np4.log" \
    env HVDC_TEST_HOSTS=2 bash tests/mpi/run_mpi.sh 4 "$dir/tests/mpi/hvdc_mpi_tests" hierarchical
  for mode in "$@"; do
    run "$label mpi $mode np2" "$logs/mpi-$mode-np2.log" \
      bash tests/mpi/run_mpi.sh 2 "$dir/tests/mpi/hvdc_mpi_tests" "$mode"
  done
}

start=$SECONDS
common="halt_on_error=1:print_stacktrace=1"

if build build-asan address,undefined; then
  # LeakSanitizer works in the ranks under mpirun (mpirun itself is not instrumented);
  # lsan.supp names Open MPI's own leaks. fast_unwind_on_malloc=0: the frame-pointer unwinder
  # stops inside the uninstrumented Open MPI, and the suppressions need the frames below it.
  ASAN_OPTIONS="$common:detect_leaks=1:fast_unwind_on_malloc=0" \
  LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="$common" \
    suite build-asan asan+ubsan bad-input
else
  failed=$((failed + 1))
  echo "sanitizers: failed: build-asan does not build"
fi

# The reduction kernels drop their target_clones under TSan (src/ops/cpu/reduce/clones.h): GCC
# instruments ifunc resolvers, which run before the TSan runtime is initialized.
if build build-tsan thread; then
  # UCX's memory hooks off: UCX patches madvise, which glibc calls from an exiting thread after
  # TSan has torn down that thread's state, so the hook's pthread_rwlock_rdlock (intercepted)
  # segfaults inside TSan. Without the hooks UCX does without its registration cache (slower,
  # same results).
  UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no \
  TSAN_OPTIONS="$common:suppressions=$supp/tsan.supp:second_deadlock_stack=1" \
    suite build-tsan tsan
else
  failed=$((failed + 1))
  echo "sanitizers: failed: build-tsan does not build"
fi

echo "sanitizers: $passed passed, $failed failed ($((SECONDS - start)) s)"
[ $failed -eq 0 ]
