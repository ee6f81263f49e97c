#!/usr/bin/env python3
"""Splits a repeated allreduce's round trip into phases, from rank 0's hvdc timeline.

hvdc_bench repeats one tensor name, so the timeline holds the same cycle over and over:
NEGOTIATE_ALLREDUCE (the submit seen -> agreed), then ALLREDUCE holding QUEUE and UCX_ALLREDUCE,
then a gap until the engine sees the next submit (the caller's wake-up in hvd_wait, its next
hvd_allreduce_async, and the engine's wake-up). The first tenth of the ops is dropped as warm-up.

usage: timeline_phases.py TIMELINE_JSON [TENSOR_NAME]
  e.g. mpirun -np 2 --bind-to none -x HVDC_TIMELINE=/tmp/tl.json \\
         build/bench/hvdc_bench -b 4K -e 4K -n 3000
       bench/timeline_phases.py /tmp/tl.json bench
"""
import json
import statistics
import sys

# (label, index of the start event, index of the end event) in one op's 8 B/E events:
# 0 B NEGOTIATE, 1 E, 2 B ALLREDUCE, 3 B QUEUE, 4 E, 5 B UCX_ALLREDUCE, 6 E, 7 E
PHASES = [("negotiate: submit seen -> agreed", 0, 1), ("agreed -> op starts", 1, 2),
          ("queue", 3, 4), ("transfer (UCX_ALLREDUCE)", 5, 6), ("op ends", 6, 7)]


def load_events(path, tensor):
    with open(path, encoding="utf-8") as f:
        text = f.read().rstrip().rstrip(",")
    events = json.loads(text if text.endswith("]") else text + "]")
    pid = next((e["pid"] for e in events if e.get("name") == "process_name"
                and e.get("args", {}).get("name") == tensor), None)
    if pid is None:
        raise SystemExit("timeline_phases.py: no tensor named %r in %s" % (tensor, path))
    return [e for e in events if e.get("pid") == pid and e.get("ph") in ("B", "E")]


def op_cycles(events):
    """The timestamps (us) of each complete op's 8 B/E events."""
    ops, i = [], 0
    while i + 8 <= len(events):
        window = events[i:i + 8]
        names = [e.get("name", "") for e in window]
        if (names[0] == "NEGOTIATE_ALLREDUCE" and names[2] == "ALLREDUCE"
                and names[3] == "QUEUE" and names[5].startswith("UCX_")):
            ops.append([e["ts"] for e in window])
            i += 8
        else:
            i += 1
    return ops[len(ops) // 10:]


def summary(label, values):
    ordered = sorted(values)
    return "%-36s median %8.1f us  mean %8.1f  p90 %8.1f" % (
        label, statistics.median(ordered), statistics.mean(ordered),
        ordered[int(0.9 * (len(ordered) - 1))])


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    ops = op_cycles(load_events(argv[1], argv[2] if len(argv) == 3 else "bench"))
    if len(ops) < 2:
        raise SystemExit("timeline_phases.py: fewer than 2 complete allreduce cycles")
    print("%d ops (after dropping the first tenth)" % len(ops))
    for label, start, end in PHASES:
        print(summary(label, [op[end] - op[start] for op in ops]))
    print(summary("op end -> next submit seen", [b[0] - a[7] for a, b in zip(ops, ops[1:])]))
    print(summary("whole cycle", [b[0] - a[0] for a, b in zip(ops, ops[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
