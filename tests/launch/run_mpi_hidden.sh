#!/usr/bin/env bash
# MPI is optional at run time: libhvdc.so.0 has no libmpi dependency, and a 3-rank job started by
# hvdcrun (TCP store) works in a mount namespace where Open MPI's library does not exist.
# Usage: run_mpi_hidden.sh HVDCRUN PROGRAM LIBHVDC
set -euo pipefail
hvdcrun=$1 prog=$2 lib=$3
if ldd "$lib" | grep -q libmpi; then
  echo "FAIL: $lib links libmpi:" >&2
  ldd "$lib" | grep libmpi >&2
  exit 1
fi
libs=$(ls /usr/lib/*/libmpi.so* /usr/lib/*/openmpi/lib/libmpi.so* 2>/dev/null | xargs -r -n1 readlink -f | sort -u || true)
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
  exec bash "$(dirname "$0")/../missing_dependency.sh" "hiding libmpi needs a mount namespace (root)"
fi
# In a private mount namespace every libmpi file becomes an empty file: a dlopen would fail.
hide=""
for f in $libs; do hide="$hide mount --bind /dev/null '$f' &&"; done
unshare -m sh -c "$hide
  if python3 -c 'import ctypes; ctypes.CDLL(\"libmpi.so.40\")' 2>/dev/null; then
    echo 'FAIL: libmpi.so.40 still loads' >&2; exit 1
  fi
  exec '$hvdcrun' -np 3 '$prog'" | tee /dev/stderr | grep -c '0 wrong' | grep -qx 3
echo "mpi-hidden: 3 ranks correct with Open MPI's library hidden"
