#!/usr/bin/env bash
# A build without UCX, CUDA or NCCL: everything else builds; a single rank works; hvd_init at
# size > 1 fails with HVD_ERR_UNSUPPORTED and says why, on every rank; a CUDA tensor and
# hvd_device_count fail with HVD_ERR_UNSUPPORTED and say how to build with CUDA; the library
# links neither UCX nor CUDA. Prints "no-ucx build: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build-noucx
opts=(-Ducx=disabled -Dcuda=disabled -Dnccl=disabled -Dtests=false)
if [ -f $dir/build.ninja ]; then
  meson configure $dir "${opts[@]}" >/dev/null || exit 1  # an older configuration catches up
else
  meson setup $dir "${opts[@]}" >/dev/null || exit 1
fi
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
# CUDA compiled out (tests/gpu/no_cuda_tensor.c, built here against this build's library).
no_cuda=$dir/no_cuda_tensor
cc -std=c99 -Wall -Wextra -Werror -Iinclude tests/gpu/no_cuda_tensor.c -o $no_cuda \
  -L$dir/src -lhvdc -Wl,-rpath,"$PWD/$dir/src" || exit 1
check $no_cuda
no_cuda_plugin() { [ ! -e $dir/src/libhvdc_cuda.so ] && ! ldd $dir/src/libhvdc.so.0 | grep -Eq 'libcuda|libnccl'; }
check no_cuda_plugin
echo "no-ucx build: $passed passed, $failed failed"
[ $failed -eq 0 ]
