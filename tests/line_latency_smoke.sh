#!/usr/bin/env bash
# line_latency, as compare.sh probes the two CPUs before every step: its JSON holds a round trip
# in nanoseconds that a cache line can take (1 ns to 1 ms), on two distinct CPUs. With one
# usable CPU it says so and exits 77; a bad argument is refused with exit 2.
set -euo pipefail
probe=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rc=0
"$probe" -n 20000 --json "$dir/line.json" || rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || { echo "FAIL: exit $rc" >&2; exit 1; }
echo "report: $(cat "$dir/line.json")"
python3 - "$dir/line.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ns, cpus = doc["round_trip_ns"], doc["cpus"]
if not 1 <= ns <= 1e6 or len(cpus) != 2 or cpus[0] == cpus[1] or doc["round_trips"] != 20000:
    sys.exit("FAIL: implausible report %r" % doc)
PY
rc=0
"$probe" -n 0 2>/dev/null || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: -n 0 gave exit $rc, want 2" >&2; exit 1; }
echo "ok"
