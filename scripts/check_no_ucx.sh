#!/usr/bin/env bash
# A build without UCX: a single rank works; hvd_init at size > 1 fails with HVD_ERR_UNSUPPORTED
# and says why, on every rank. Prints "no-ucx build: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build-noucx
[ -f $dir/build.ninja ] || meson setup $dir -Ducx=disabled -Dtests=false >/dev/null || exit 1
meson compile -C $dir >/dev/null || exit 1
passed=0 failed=0
check() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "no-ucx: failed: $*"; fi; }
check $dir/examples/allreduce
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Without orte_abort_on_non_zero_status 0, mpirun kills the job when the first rank exits with
# an error, sometimes before the other rank has printed its own.
out=$(timeout 120 mpirun -np 2 --oversubscribe --bind-to none \
  --mca orte_abort_on_non_zero_status 0 $dir/examples/allreduce 2>&1)
check test "$(grep -c 'unsupported: .*built without UCX' <<<"$out")" = 2
not_linked_to_ucx() { ! ldd $dir/src/libhvdc.so.0 | grep -q libucp; }
check not_linked_to_ucx
echo "no-ucx build: $passed passed, $failed failed"
[ $failed -eq 0 ]
