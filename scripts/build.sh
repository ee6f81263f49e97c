#!/usr/bin/env bash
# Configures (once) and builds hvdc in ./build. CUDA and NCCL are compiled in whenever the
# toolkit is installed under /usr/local/cuda, so that path is always compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
opts=()
if [ -d /usr/local/cuda ]; then opts+=(-Dcuda=enabled -Dnccl=enabled); fi
if [ ! -f build/build.ninja ]; then
  meson setup build "${opts[@]}"
fi
meson compile -C build
