#!/usr/bin/env bash
# Builds hvdc with CUDA and NCCL and runs everything that needs a GPU: the gpu suite at np 1
# (NCCL) and np 2 on one GPU (host staging), then the device benchmarks (hvdc's allreduce
# against raw ncclAllReduce, the fusion copy kernel against cudaMemcpyAsync). Meant for a GPU
# machine that has CUDA and NCCL under /usr/local/cuda but no network, no UCX and no Open MPI:
#
#   scripts/gpu_check.sh fetch   # here, with the network: .debs/ (UCX, GoogleTest) and .whl/
#                                # (meson, ninja), both git-ignored
#   scripts/gpu_check.sh         # there, with .debs/ and .whl/ carried along: installs nothing
#                                # system-wide; unpacks into .gpu-root/ and builds build-gpu/
#
# Ranks run under build-gpu/src/hvdcrun (no MPI). Prints "gpu check: N passed, M failed" and
# writes the benchmark output to build-gpu/gpu-bench.txt. docs/gpu.md has the details.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
debs=(libucx0 libucx-dev libnuma1 libibverbs1 librdmacm1 ibverbs-providers libgtest-dev
  googletest pkgconf pkgconf-bin libpkgconf3)

if [ "${1:-}" = fetch ]; then
  mkdir -p .debs .whl
  (cd .debs && apt-get download "${debs[@]}") || exit 1
  python3 -m pip download --only-binary=:all: --dest .whl meson ninja || exit 1
  echo "gpu check: fetched $(ls .debs | wc -l) packages into .debs/, $(ls .whl | wc -l) wheels into .whl/"
  exit 0
fi

export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# Tools: meson and ninja from the carried wheels unless installed.
if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
  python3 -m venv .gpu-venv && .gpu-venv/bin/pip install --no-index --find-links .whl meson ninja \
    >/dev/null || { echo "gpu check: cannot install meson/ninja from .whl/"; exit 1; }
  export PATH=$root/.gpu-venv/bin:$PATH
fi
# Libraries (and pkg-config itself): UCX and GoogleTest from the carried .debs unless installed.
if ! pkg-config --exists ucx gtest 2>/dev/null; then
  mkdir -p .gpu-root
  for d in .debs/*.deb; do dpkg-deb -x "$d" .gpu-root || exit 1; done
  lib=$root/.gpu-root/usr/lib/x86_64-linux-gnu
  # The .pc files name /usr (prefix = /usr, or libdir=/usr/lib/...): point them at the tree.
  sed -i -E "s#^(prefix|libdir|includedir)( ?= ?)/usr#\1\2$root/.gpu-root/usr#" \
    "$lib"/pkgconfig/*.pc
  export PKG_CONFIG_PATH=$lib/pkgconfig:${PKG_CONFIG_PATH:-}
  export LD_LIBRARY_PATH=$lib:$lib/ucx:${LD_LIBRARY_PATH:-}
  export UCX_MODULE_DIR=$lib/ucx
  command -v pkg-config >/dev/null || export PATH=$PATH:$root/.gpu-root/usr/bin
fi
nvidia-smi -L || echo "gpu check: nvidia-smi failed (no driver?)"

dir=build-gpu
start=$(date +%s)
mkdir -p $dir
log=$root/$dir/gpu-build.log
fail_build() { tail -40 "$log"; echo "gpu check: the build failed (all of it in $log)"; exit 1; }
if [ ! -f $dir/build.ninja ]; then
  meson setup $dir -Dcuda=enabled -Dnccl=enabled -Dmpi=disabled >"$log" 2>&1 || fail_build
fi
ninja -C $dir src/libhvdc_cuda.so tests/gpu/hvdc_gpu_tests src/hvdcrun bench/hvdc_device_bench \
  >>"$log" 2>&1 || fail_build
echo "gpu check: built in $(($(date +%s) - start)) s"

passed=0 failed=0
check() {
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "gpu check: failed: $*"; fi
}
export HVDC_REQUIRE_GPU=1  # no GPU here is a failure, not a skip
check $dir/tests/gpu/hvdc_gpu_tests
check $dir/src/hvdcrun -np 2 $dir/tests/gpu/hvdc_gpu_tests
{
  $dir/bench/hvdc_device_bench -b 1K -e 256M -f 4 -n 20 -w 5
  $dir/bench/hvdc_device_bench --copy -b 64K -e 256M -f 4 -n 20 -w 5
} | tee $dir/gpu-bench.txt
check test "${PIPESTATUS[0]}" = 0
echo "gpu check: $passed passed, $failed failed"
[ $failed -eq 0 ]
