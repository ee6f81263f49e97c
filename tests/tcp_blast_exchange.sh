#!/usr/bin/env bash
# tcp_blast's exchange mode over loopback, as compare.sh measures the two-host link for each op
# size with it: both ends send and receive BYTES a round on one connection, each prints a rate
# per send() size and the best, which must be the largest of them. Bad arguments exit 2.
set -euo pipefail
blast=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
"$blast" exchange-listen "$port" 262144 >"$dir/listener.json" &
listener=$!
"$blast" exchange 127.0.0.1 "$port" 262144 >"$dir/connector.json"
wait "$listener"
for end in listener connector; do
  echo "$end: $(cat "$dir/$end.json")"
  python3 - "$dir/$end.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rates = r["by_piece"]
ok = (r["bytes"] == 262144 and r["rounds"] == 1024
      and sorted(rates, key=int) == ["57344", "65536", "131072", "262144"]
      and all(v > 0 for v in rates.values()) and r["gbps"] == max(rates.values()))
sys.exit(0 if ok else "FAIL: want 1024 rounds of 262144 bytes, positive rates for 56, 64, 128 "
         "and 256 KiB sends (the whole BYTES is 256 KiB), gbps their best")
PY
done
for bad in "exchange 127.0.0.1 $port 0" "exchange 127.0.0.1 $port 2G" "exchange-listen 0 4096"; do
  rc=0
  # shellcheck disable=SC2086
  "$blast" $bad 2>/dev/null || rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: tcp_blast $bad gave exit $rc, want 2" >&2; exit 1; }
done
echo "ok"
