#!/usr/bin/env python3
"""Runs the timeline mode under mpirun and checks the files rank 0 wrote.

Usage: check_timeline.py RUN_MPI NP PROGRAM OUTDIR

The first file (HVDC_TIMELINE) must parse with json.load after hvd_shutdown and hold, per tensor,
balanced B/E spans: NEGOTIATE_<OP> with one tick per rank, then <OP> with QUEUE and the transport
phase nested, ending with dtype and shape args; the cached steps of tl.a negotiate through the
cache with a tick per rank too; the fused group shows MEMCPY_IN/OUT_FUSION_BUFFER. The second file
(from hvd_timeline_start) holds tl.second and nothing from before the switch.
"""
import collections
import json
import os
import subprocess
import sys


def load(path):
    with open(path) as f:
        events = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    by_tensor = collections.defaultdict(list)
    for e in events:
        if e.get("ph") in ("B", "E", "X") and e.get("pid") in names:
            by_tensor[names[e["pid"]]].append(e)
    return by_tensor


def spans(events):
    """(name, depth, ticks inside, end args) for each B/E pair; raises if unbalanced."""
    stack, out = [], []
    for e in events:
        if e["ph"] == "B":
            stack.append([e["name"], len(stack), 0])
        elif e["ph"] == "X":
            if stack:
                stack[-1][2] += 1
        else:
            name, depth, ticks = stack.pop()
            out.append((name, depth, ticks, e.get("args", {})))
    if stack:
        raise ValueError("unclosed spans: %s" % stack)
    return out


def check(failures, ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def main(run_mpi, np, program, outdir):
    np = int(np)
    first = os.path.join(outdir, "timeline-np%d.json" % np)
    second = os.path.join(outdir, "timeline-np%d-second.json" % np)
    for p in (first, second):
        if os.path.exists(p):
            os.remove(p)
    env = dict(os.environ, HVDC_TIMELINE=first, HVDC_TEST_TIMELINE2=second)
    rc = subprocess.run(["bash", run_mpi, str(np), program, "timeline"], env=env).returncode
    failures = []
    check(failures, rc == 0, "the timeline mode ran (exit %d)" % rc)
    tensors = load(first)
    s = {name: spans(ev) for name, ev in tensors.items()}
    a = s.get("tl.a", [])
    negotiations = [x for x in a if x[0] == "NEGOTIATE_ALLREDUCE"]
    check(failures, len(negotiations) == 3 and all(x[2] == np for x in negotiations),
          "tl.a: 3 NEGOTIATE_ALLREDUCE spans (1 negotiated, 2 cached), %d ticks each" % np)
    ops = [x for x in a if x[0] == "ALLREDUCE" and x[1] == 0]
    check(failures, len(ops) == 3 and all(x[3].get("dtype") == "float32" and
                                          x[3].get("shape") == "[1000]" for x in ops),
          "tl.a: 3 ALLREDUCE spans ending with dtype float32 and shape [1000]")
    check(failures, sum(1 for x in a if x[0] == "QUEUE" and x[1] == 1) == 3 and
          sum(1 for x in a if x[0] == "UCX_ALLREDUCE" and x[1] == 1) == 3,
          "tl.a: QUEUE and UCX_ALLREDUCE nested in each ALLREDUCE")
    check(failures, any(x[0] == "NEGOTIATE_ALLGATHER" for x in s.get("tl.g", [])) and
          any(x[0] == "UCX_ALLGATHER" for x in s.get("tl.g", [])), "tl.g: allgather spans")
    check(failures, any(x[0] == "BROADCAST" for x in s.get("tl.b", [])), "tl.b: broadcast span")
    fused = [x for k in range(8) for x in s.get("tl.f.%d" % k, [])]
    copied = any(x[0] == "MEMCPY_IN_FUSION_BUFFER" for x in fused) and \
        any(x[0] == "MEMCPY_OUT_FUSION_BUFFER" for x in fused)
    # One rank reduces nothing, so nothing is copied: the spans appear only where copies happen.
    check(failures, copied if np > 1 else not copied,
          "tl.f.*: MEMCPY_IN/OUT_FUSION_BUFFER around the fused allreduce" if np > 1
          else "tl.f.*: no fusion-buffer copies on one rank")
    # Peers may report tl.second before rank 0 switches files: its negotiation can begin (and is
    # then closed) in the first file, but it runs in the second.
    check(failures, not any(x[0] == "ALLREDUCE" for x in s.get("tl.second", [])),
          "the first file ends at hvd_timeline_start")
    later = load(second)
    check(failures, set(later) == {"tl.second"} and
          any(x[0] == "ALLREDUCE" for x in spans(later["tl.second"])),
          "the second file holds tl.second only")
    print("timeline: %d passed, %d failed" % (9 - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
