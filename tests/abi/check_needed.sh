#!/usr/bin/env bash
# The libraries' dynamic dependencies (readelf -d, NEEDED): libhvdc.so.0 runs where CUDA and NCCL
# are absent, so it needs neither; the CUDA plugin links the CUDA runtime and NCCL, but never the
# driver library (driver symbols come through cudaGetDriverEntryPoint).
#
# Usage: check_needed.sh LIBHVDC [LIBHVDC_CUDA]   (the plugin only in builds that have it)
set -euo pipefail
lib=$1 plugin=${2:-}
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
status=0
fail() { echo "FAIL: $*" >&2; status=1; }
lib_needs=$(needed "$lib")
echo "$lib needs: $(echo $lib_needs)"
if grep -Eq '^lib(cuda|cudart|nccl)[.-]' <<<"$lib_needs"; then
  fail "$lib must not need CUDA or NCCL"
fi
if [ -n "$plugin" ]; then
  plugin_needs=$(needed "$plugin")
  echo "$plugin needs: $(echo $plugin_needs)"
  grep -Eq '^libcudart\.so' <<<"$plugin_needs" || fail "$plugin does not need libcudart"
  grep -Eq '^libnccl\.so' <<<"$plugin_needs" || fail "$plugin does not need libnccl"
  if grep -Eq '^libcuda\.so' <<<"$plugin_needs"; then
    fail "$plugin needs the driver library libcuda (use cudaGetDriverEntryPoint)"
  fi
fi
[ $status -eq 0 ] && echo "needed: ok"
exit $status
