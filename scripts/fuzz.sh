#!/usr/bin/env bash
# Fuzzes the wire decoders (tests/fuzz/wire_fuzz.cc) with libFuzzer for SECONDS (default 60) and
# prints one line "fuzz: wire: N runs in S s, C crashes". Builds with clang++ straight from the
# sources the target needs (meson's compiler is gcc) into build-fuzz/, seeds the corpus from the
# target's own valid encodings, and keeps the grown corpus in build-fuzz/corpus between runs. A
# crash input is saved as build-fuzz/crash-*; fix it, then keep it in tests/fuzz/regressions/.
#
# Usage: scripts/fuzz.sh [SECONDS]     (docs/fuzzing.md)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out="${FUZZ_OUT:-build-fuzz}"
cxx="${FUZZ_CXX:-clang++}"
max_len="${FUZZ_MAX_LEN:-4096}"

if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: wire: $cxx not found (scripts/setup.sh installs clang)" >&2
  exit 1
fi

sources=(
  tests/fuzz/wire_fuzz.cc tests/fuzz/wire_fuzz_seeds.cc
  src/core/message.cc src/common/wire.cc src/common/status.cc src/common/dtype.cc
  src/common/log.cc src/common/sha256.cc src/common/copy_bytes.cc
  src/bootstrap/tcp/frame.cc src/bootstrap/tcp/protocol.cc src/bootstrap/tcp/socket.cc
)
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
  -fno-sanitize-recover=all -Iinclude -Isrc -Itests/fuzz)

# Rebuild only when a source, a header or the flags changed.
mkdir -p "$out/corpus" "$out/seeds"
stamp="$(cat "${sources[@]}" $(find include src/common src/core src/bootstrap tests/fuzz -name '*.h') \
  | sha256sum | cut -c1-16)-$(echo "$cxx ${flags[*]}" | sha256sum | cut -c1-16)"
if [ ! -x "$out/wire_fuzz" ] || [ "$(cat "$out/stamp" 2>/dev/null)" != "$stamp" ]; then
  objects=()
  for src in "${sources[@]}"; do
    obj="$out/obj/${src//\//_}.o"
    objects+=("$obj")
    mkdir -p "$out/obj"
    nice "$cxx" "${flags[@]}" -c "$src" -o "$obj" &
    # Two compilers at a time: the machines this runs on have two cores.
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
  done
  wait
  nice "$cxx" "${flags[@]}" "${objects[@]}" -o "$out/wire_fuzz"
  echo "$stamp" >"$out/stamp"
fi

rm -f "$out"/seeds/*
WIRE_FUZZ_WRITE_SEEDS="$out/seeds" "$out/wire_fuzz" >/dev/null

log="$out/fuzz.log"
status=0
start=$SECONDS
# The first directory collects new inputs; the others are read only.
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  nice "$out/wire_fuzz" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 \
  -malloc_limit_mb=64 -print_final_stats=1 -artifact_prefix="$out/" \
  "$out/corpus" "$out/seeds" tests/fuzz/regressions >"$log" 2>&1 || status=$?
secs=$((SECONDS - start))
runs="$(sed -n 's/^Done \([0-9]*\) runs in .*/\1/p' "$log" | tail -1)"
[ -n "$runs" ] || runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
if [ "$status" -ne 0 ]; then
  crash="$(ls -t "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null | head -1 ||
    true)"
  tail -n 40 "$log" >&2
  echo "fuzz: wire: ${runs:-?} runs in $secs s, 1 crashes (input: ${crash:-none saved, see $log})"
  exit 1
fi
echo "fuzz: wire: ${runs:-?} runs in $secs s, 0 crashes"
