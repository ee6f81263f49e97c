#!/usr/bin/env python3
"""Runs the timeline mode under mpirun and checks the files rank 0 wrote.

Usage: check_timeline.py RUN_MPI NP PROGRAM OUTDIR

The first file (HVDC_TIMELINE) must parse with json.load after hvd_shutdown and hold, per tensor,
balanced B/E spans: NEGOTIATE_<OP> with one tick per rank, then <OP> with QUEUE and the transport
phase nested, ending with dtype and shape args; the cached steps of tl.a negotiate through the
cache (on one host: on the set's board, the lane) with a tick per rank too. The fused group shows
MEMCPY_IN/OUT_FUSION_BUFFER where it goes through the transport (HVDC_LOCAL_MIN_BYTES above its
3200 bytes, the default), and where it is reduced in place among the ranks of one host, an op span
with the transport phase per tensor and no fusion buffer. The second file (from
hvd_timeline_start) holds tl.second and nothing from before the switch.
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
    in_place = int(os.environ.get("HVDC_LOCAL_MIN_BYTES", "16384")) <= 3200
    tag = "-in-place" if in_place else ""
    first = os.path.join(outdir, "timeline-np%d%s.json" % (np, tag))
    second = os.path.join(outdir, "timeline-np%d%s-second.json" % (np, tag))
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
    every_op = all(
        any(x[0] == "ALLREDUCE" for x in s.get("tl.f.%d" % k, [])) and
        any(x[0] == "UCX_ALLREDUCE" for x in s.get("tl.f.%d" % k, [])) for k in range(8))
    # One rank reduces nothing, and the in-place path reads the tensors where they lie: the copies
    # appear only on the transport, between ranks.
    if np > 1 and not in_place:
        check(failures, copied and every_op,
              "tl.f.*: MEMCPY_IN/OUT_FUSION_BUFFER around the fused allreduce")
    else:
        check(failures, every_op and not copied,
              "tl.f.*: an op span per tensor, no fusion-buffer copies (%s)" %
              ("one rank" if np == 1 else "in place"))
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
