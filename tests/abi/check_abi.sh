#!/usr/bin/env bash
# Compares the built libhvdc.so.0 with the committed ABI baseline, libhvdc.so.0.abixml: exported
# functions and variables, and the layout of every public type they reach (the library's C API
# objects carry debug information for this: src/meson.build). Only types declared under
# include/ count. Any difference fails, additions included: the ABI changes only on purpose.
#
# To change the ABI on purpose, regenerate the baseline in the same change, from a build of that
# change (build/ as scripts/build.sh makes it), at the repository root:
#   abidw --headers-dir include --drop-private-types --exported-interfaces-only \
#     --no-corpus-path --short-locs --out-file tests/abi/libhvdc.so.0.abixml build/src/libhvdc.so.0
# and review `git diff tests/abi/libhvdc.so.0.abixml`.
#
# Usage: check_abi.sh LIBRARY BASELINE HEADERS_DIR
set -euo pipefail
lib=$1 baseline=$2 headers=$3
# Without type information the comparison would be of symbols only: refuse both sides.
if ! grep -q "<class-decl name='hvd_op_args_t'" "$baseline"; then
  echo "FAIL: $baseline describes no public struct (made from a library without -g?)" >&2
  exit 1
fi
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
  echo "FAIL: $lib has no debug information: the C API objects must be built with -g" >&2
  exit 1
fi
status=0
report=$(abidiff --headers-dir2 "$headers" "$baseline" "$lib") || status=$?
if [ "$status" != 0 ]; then
  echo "$report"
  echo "FAIL: the ABI of $lib differs from $baseline (abidiff exit status $status)." >&2
  echo "If the change is on purpose, regenerate the baseline as the comment in $0 says." >&2
  exit 1
fi
echo "abi: $lib matches $baseline"
