#!/usr/bin/env bash
# tcp_blast's duplex mode over loopback, as compare.sh measures the two-host link with it: both
# ends send and receive at once on one connection, each prints what it received (JSON), and
# both directions must have carried data. A bad argument is refused with exit 2.
set -euo pipefail
blast=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
"$blast" duplex-listen "$port" 0.3 >"$dir/listener.json" &
listener=$!
"$blast" duplex 127.0.0.1 "$port" 0.3 >"$dir/connector.json"
wait "$listener"
for end in listener connector; do
  echo "$end received: $(cat "$dir/$end.json")"
  grep -Eq '^\{"bytes": [1-9][0-9]*, "seconds": [0-9.]+, "gbps": [0-9.]+\}$' "$dir/$end.json" || {
    echo "FAIL: the $end's report is not a positive byte count" >&2
    exit 1
  }
done
rc=0
"$blast" duplex 127.0.0.1 "$port" 0 2>/dev/null || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: SECONDS 0 gave exit $rc, want 2" >&2; exit 1; }
echo "ok"
