#!/usr/bin/env bash
# Installs the Debian packages hvdc needs to build and test, skipping those already present.
set -euo pipefail
packages=(
  g++ meson ninja-build pkg-config python3 python3-venv clang-format
  libucx-dev ucx-utils libopenmpi-dev openmpi-bin libgtest-dev libdlpack-dev abigail-tools
  iproute2 util-linux
  # the example trainer: zlib for IDX files, the 8x8 digits that sklearn ships
  zlib1g-dev python3-sklearn
  # tests/rust: Debian 12's own Rust (rustc 1.63, cargo), the oldest toolchain the binding supports
  rustc cargo
  # scripts/fuzz.sh: clang++ and libclang_rt.fuzzer (in libclang-rt-14-dev, which clang only
  # recommends; libclang-rt-dev tracks the default clang's version)
  clang libclang-rt-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
