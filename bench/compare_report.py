#!/usr/bin/env python3
"""compare.sh's bookkeeping (standard library only).

  compare_report.py machine OUT_DIR PART...   records the machine, commit, date and load
  compare_report.py report OUT_DIR            reads OUT_DIR/raw/*.json, writes compare.json (every
                                              raw number and the table), compare.csv (one raw
                                              number a line) and compare.md, prints the table

Every figure in the table is the median over invocations. Ratios and verdicts are taken side
by side within each invocation (hvdc against that invocation's better Open MPI pml, its limit,
its target), then their median is shown: a slow phase of the machine between invocations then
never pairs one invocation's hvdc with another's MPI or limit. Targets are against the better
Open MPI pml, capped at 90% of the limit measured in the same run (DESIGN.md section 6); the
target column shows the target computed from the medians, the met? column the median of hvdc
against each invocation's own target.
"""
import csv
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

KIB, MIB = 1 << 10, 1 << 20
ONE_HOST_SIZES = [64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
LATENCY_TARGET_US = 5.0
MODEL_TARGET = 0.6
MODELS = [("resnet50", "ResNet-50"), ("bert_base", "BERT-base")]


def command_output(args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def load_average():
    with open("/proc/loadavg", encoding="utf-8") as f:
        return " ".join(f.read().split()[:3])


def record_machine(out, parts):
    lscpu = command_output(["lscpu"])
    model = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    with open("/proc/meminfo", encoding="utf-8") as f:
        mem_kib = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirty = command_output(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"])
    machine = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": command_output(["git", "-C", root, "rev-parse", "--short=10", "HEAD"])
        + ("+uncommitted" if dirty else ""),
        "cpu": model.group(1) if model else "unknown",
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / (1 << 20), 1),
        "kernel": command_output(["uname", "-r"]),
        "open_mpi": command_output(["mpirun", "--version"]).splitlines()[0:1],
        "ucx": command_output(["ucx_info", "-v"]).splitlines()[0:1],
        "load_at_start": load_average(),
        "command": os.environ.get("COMPARE_COMMAND", "bench/compare.sh"),
        "parts": parts,
    }
    machine["open_mpi"] = machine["open_mpi"][0] if machine["open_mpi"] else "unknown"
    machine["ucx"] = machine["ucx"][0].lstrip("# ") if machine["ucx"] else "unknown"
    with open(os.path.join(out, "machine.json"), "w", encoding="utf-8") as f:
        json.dump(machine, f, indent=1)


class Series:
    """Raw numbers: series name -> key (a size in bytes, or "value") -> {invocation: number}."""

    def __init__(self):
        self.data = {}

    def add(self, name, key, invocation, value):
        if value is not None and value > 0:
            self.data.setdefault(name, {}).setdefault(key, {})[invocation] = value

    def median(self, name, key="value"):
        values = list(self.data.get(name, {}).get(key, {}).values())
        return statistics.median(values) if values else None

    def at(self, name, key, i):
        return self.data.get(name, {}).get(key, {}).get(i)

    def median_over(self, fn):
        """The median over the invocations of fn(i), skipping those where it is None."""
        invocations = sorted({i for d in self.data.values() for k in d.values() for i in k})
        values = [v for v in (fn(i) for i in invocations) if v is not None]
        return statistics.median(values) if values else None


def invocation_of(filename):
    return int(re.search(r"-(\d+)\.json$", filename).group(1))


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def collect_bench(series, prefix, source, path, i):
    """One hvdc_bench JSON: hvdc's figures when it ran hvdc, MPI's under --mpi-only."""
    doc = read_json(path)
    hvdc = doc.get("hvdc", True)
    for row in doc["rows"]:
        series.add(prefix + source, row["bytes"], i, row["busbw"] if hvdc else row["mpi_busbw"])
    if "-small-" in path:
        latency = doc["latency_4k_us"] if hvdc else doc["latency_4k_mpi_us"]
        series.add("latency_" + source, "value", i, latency)
    # Every hvdc_bench run on one host times Open MPI's 4 KiB round trip: a steadiness probe.
    if not prefix and doc.get("latency_4k_mpi_us"):  # one host only: TCP is slower by nature
        run = os.path.basename(path)[:-len(".json")]
        series.add("probe_mpi_4k_us", run, i, doc["latency_4k_mpi_us"])


def collect(raw):
    series = Series()
    for name in sorted(os.listdir(raw)):
        if not name.endswith(".json"):
            continue
        path, i = os.path.join(raw, name), invocation_of(name)
        if m := re.match(r"(hvdc|ob1|ucx|shared)-(small|mid|large)-", name):
            collect_bench(series, "", m.group(1), path, i)
        elif m := re.match(r"mh-(hvdc|ob1|ucx)-", name):
            collect_bench(series, "mh_", m.group(1), path, i)
        elif name.startswith("line-"):  # before the step named after it
            series.add("line_ns", name[len("line-"):-len(".json")], i,
                       read_json(path)["round_trip_ns"])
        elif name.startswith("limit-"):
            for row in read_json(path)["rows"]:
                for key in ("limit_busbw", "reduce_busbw", "reduce_nt_busbw",
                            "reduce_blocked_busbw", "stream_gbps", "stream_busbw_bound",
                            "cma_busbw", "sync_us", "synced_busbw"):
                    if key in row:
                        series.add(key, row["bytes"], i, row[key])
        elif m := re.match(r"model-(\w+?)-(ob1|ucx)-", name):
            for v in read_json(path)["variants"]:
                own = v["variant"].startswith(("hvdc", "limit"))  # not an MPI variant
                source = v["variant"].replace("-", "_") if own else m.group(2) + "_" + v["variant"]
                series.add("model_%s_%s" % (m.group(1), source), "value", i, v["median_ms"])
        elif m := re.match(r"mh-link-exchange-(\d+)-", name):
            series.add("mh_link_exchange", int(m.group(1)), i, read_json(path)["gbps"])
        elif m := re.match(r"mh-link-(oneway|bidir-ab|bidir-ba)-", name):
            series.add("mh_link_" + m.group(1).replace("-", "_"), "value", i,
                       read_json(path)["gbps"])
    # Both ways at once: the slower direction's figure limits an allreduce, which needs both.
    for i in series.data.get("mh_link_bidir_ab", {}).get("value", {}):
        ab = series.data["mh_link_bidir_ab"]["value"][i]
        ba = series.data.get("mh_link_bidir_ba", {}).get("value", {}).get(i)
        if ba is not None:
            series.add("mh_link_bidir", "value", i, min(ab, ba))
    return series


def size_label(n):
    return "%d MiB" % (n // MIB) if n >= MIB else "%d KiB" % (n // KIB)


def smallest(*values):
    present = [v for v in values if v]
    return min(present) if present else None


def largest(*values):
    present = [v for v in values if v]
    return max(present) if present else None


def fmt(v, digits=2):
    return "-" if v is None else "%.*f" % (digits, v)


def verdict(ok):
    return "-" if ok is None else ("yes" if ok else "**no**")


def ratio(a, b):
    return a / b if a and b else None


def side_by_side(s, at, time=False):
    """at(i) -> (hvdc, better MPI, target) of invocation i. Returns the medians over invocations
    of hvdc / MPI and of hvdc against its target (target / hvdc for times): >= 1 met."""
    def vs_mpi(i):
        h, better, _ = at(i)
        return ratio(h, better)

    def margin(i):
        h, _, target = at(i)
        return ratio(target, h) if time else ratio(h, target)
    return s.median_over(vs_mpi), s.median_over(margin)


def margin_verdict(margin):
    """margin: the median over invocations of hvdc against that invocation's target (>= 1 met;
    for times, target / hvdc)."""
    if margin is None:
        return "-"
    return "%s (%.2fx target)" % (verdict(margin >= 1), margin)


def bandwidth_target(size):
    if size <= 64 * KIB:
        return 1.0
    return 1.5 if size <= 16 * MIB else 2.2


def one_host_rows(s):
    rows = []
    h, o, u = (s.median("latency_" + k) for k in ("hvdc", "ob1", "ucx"))
    better = smallest(o, u)
    if h or o or u:
        rows.append(["4 KiB allreduce round trip, us (hvdc: async + wait)", fmt(h), fmt(o), fmt(u),
                     "-", fmt(h / better) + "x time" if h and better else "-",
                     "<= %.0f us" % LATENCY_TARGET_US,
                     verdict(h <= LATENCY_TARGET_US if h else None)])
    for size in ONE_HOST_SIZES:
        h, o, u, lim = (s.median(k, size) for k in ("hvdc", "ob1", "ucx", "limit_busbw"))
        if not (h or o or u or lim):
            continue
        target, why = bandwidth_target_of(size, largest(o, u), lim)

        def at(i, size=size):
            h, o, u, lim = (s.at(k, size, i) for k in ("hvdc", "ob1", "ucx", "limit_busbw"))
            return h, largest(o, u), bandwidth_target_of(size, largest(o, u), lim)[0]
        vs_mpi, margin = side_by_side(s, at)
        rows.append(["busbw %s, GB/s" % size_label(size), fmt(h), fmt(o), fmt(u), fmt(lim),
                     fmt(vs_mpi) + "x" if vs_mpi else "-",
                     ">= %s (%s)" % (fmt(target), why) if target else "-",
                     margin_verdict(margin)])
    return rows


def bandwidth_target_of(size, better, lim):
    """The target busbw against the better MPI, capped at 90% of the limit, and why."""
    if not better:
        return None, ""
    target, why = bandwidth_target(size) * better, "%.1fx MPI" % bandwidth_target(size)
    if lim and target > 0.9 * lim:
        target, why = 0.9 * lim, "90% of limit"
    return target, why


def limit_rows(s):
    rows = []
    sizes = sorted(s.data.get("stream_gbps", {}))
    if sizes:
        big = sizes[-1]
        stream = s.median("stream_gbps", big)
        rows.append(["memory bandwidth, streaming read+write of %s by 2 processes, GB/s"
                     % size_label(big), "-", "-", "-",
                     "%s (busbw bound %s)" % (fmt(stream), fmt(stream / 4)), "-", "-", "-"])
    for size in ONE_HOST_SIZES:
        h, lim = s.median("shared", size), s.median("limit_busbw", size)
        if not (h or lim):
            continue
        def against_limit(i, size=size):
            return ratio(s.at("shared", size, i), s.at("limit_busbw", size, i))
        side_by_side = s.median_over(against_limit)
        rows.append(["busbw %s on hvd_mem_alloc buffers, in place, GB/s" % size_label(size),
                     fmt(h), "-", "-", fmt(lim),
                     fmt(side_by_side) + "x limit" if side_by_side else "-",
                     ">= %s (80%% of limit)" % fmt(0.8 * lim) if lim else "-",
                     margin_verdict(side_by_side / 0.8 if side_by_side else None)])
    return rows + cma_rows(s)


# Heap buffers (private to each process) can only be reached through kernel copies: shm_limit's
# cma kernel is their limit. No target: the row shows how close the heap path gets.
def cma_rows(s):
    rows = []
    for size in ONE_HOST_SIZES:
        h, cma = s.median("hvdc", size), s.median("cma_busbw", size)
        if size < 1 << 20 or not (h and cma):
            continue
        rows.append(["busbw %s on heap buffers against kernel copies (cma), GB/s"
                     % size_label(size), fmt(h), "-", "-", fmt(cma),
                     fmt(h / cma) + "x cma limit", "-", "-"])
    return rows


def best_variant(s, model, pml, i=None):
    """The fastest MPI variant under `pml`: (median ms, name), or in invocation i only."""
    best = None
    for name in s.data:
        prefix = "model_%s_%s_" % (model, pml)
        if name.startswith(prefix):
            v = s.median(name) if i is None else s.at(name, "value", i)
            if v and (best is None or v < best[0]):
                best = (v, name[len(prefix):])
    return best


def variant_cell(best):
    return "%s (%s)" % (fmt(best[0], 1), best[1]) if best else "-"


def model_target_of(better, lim):
    """The step-time target: 0.6x the better MPI, or 90% of the limit's speed where that is
    slower, and why."""
    if not better:
        return None, ""
    target, why = MODEL_TARGET * better, "%.1fx MPI" % MODEL_TARGET
    if lim and target < lim / 0.9:
        target, why = lim / 0.9, "90% of limit's speed"
    return target, why


# The heap step's limit is hvdc_model_step's limit-staged: the same tensors, the fewest copies
# two processes need when neither can map the other's buffers, no engine. Where 0.6x MPI would
# be faster than that, the target is 90% of its speed, as for the bandwidth rows.
def model_rows(s):
    rows = []
    for model, title in MODELS:
        o, u = best_variant(s, model, "ob1"), best_variant(s, model, "ucx")
        better = smallest(o[0] if o else None, u[0] if u else None)
        lim_name = "model_%s_limit_staged" % model
        for source, where in (("hvdc", ""), ("hvdc_shared", " on hvd_mem_alloc gradient buffers")):
            name = "model_%s_%s" % (model, source)
            h = s.median(name)
            if not (h or o or u) or (source != "hvdc" and not h):
                continue
            heap = source == "hvdc"  # the staged limit is the heap step's
            target, why = model_target_of(better, s.median(lim_name) if heap else None)

            def at(i, name=name, heap=heap):
                bests = [best_variant(s, model, p, i) for p in ("ob1", "ucx")]
                better_i = smallest(*(b[0] for b in bests if b))
                lim_i = s.at(lim_name, "value", i) if heap else None
                return s.at(name, "value", i), better_i, model_target_of(better_i, lim_i)[0]
            lim = s.median(lim_name) if heap else None
            vs_mpi, margin = side_by_side(s, at, time=True)
            rows.append(["%s gradient step%s, ms" % (title, where), fmt(h, 1), variant_cell(o),
                         variant_cell(u), "%s (staged)" % fmt(lim, 1) if lim else "-",
                         fmt(vs_mpi) + "x time" if vs_mpi else "-",
                         "<= %s (%s)" % (fmt(target, 1), why) if target else "-",
                         margin_verdict(margin)])
    return rows


def multihost_rows(s):
    rows = []
    oneway, bidir = s.median("mh_link_oneway"), s.median("mh_link_bidir")
    if oneway or bidir:
        rows.append(["two hosts: veth raw TCP, one stream / each way at once, GB/s", "-", "-", "-",
                     "%s / %s" % (fmt(oneway), fmt(bidir)), "-", "-", "-"])
    sizes = set(s.data.get("mh_hvdc", {})) | set(s.data.get("mh_ob1", {}))
    for size in sorted(sizes):
        h, o, u = (s.median("mh_" + k, size) for k in ("hvdc", "ob1", "ucx"))
        link = largest(bidir, s.median("mh_link_exchange", size))
        target = multihost_target_of(largest(o, u), link)

        def at(i, size=size):
            h, o, u = (s.at("mh_" + k, size, i) for k in ("hvdc", "ob1", "ucx"))
            link_i = multihost_link_at(s, size, i)
            return h, largest(o, u), multihost_target_of(largest(o, u), link_i)
        vs_mpi, margin = side_by_side(s, at)
        rows.append(["two hosts: busbw %s, GB/s (UCX/TCP vs MPI over TCP; link: the better of "
                     "the stream both ways and the op's bytes exchanged)" % size_label(size),
                     fmt(h), fmt(o), fmt(u), fmt(link), fmt(vs_mpi) + "x" if vs_mpi else "-",
                     ">= %s (1.0x MPI, >= 80%% link, <= 90%% link)" % fmt(target)
                     if target else "-",
                     margin_verdict(margin)])
    return rows


def multihost_link_at(s, size, i):
    """The link's limit for ops of `size` in invocation i: the better of the stream both ways at
    once and the op's bytes exchanged both ways a round in the best send() size (a burst, which
    a socket's buffers absorb where a stream cannot: on the netns pair 1 MiB bursts ran 2x the
    stream)."""
    return largest(s.at("mh_link_bidir", "value", i), s.at("mh_link_exchange", size, i))


def multihost_target_of(better, bidir):
    """1.0x MPI over TCP and 80% of the link both ways at once, capped at 90% of the link."""
    if not (better and bidir):
        return None
    return max(min(better, 0.9 * bidir), 0.8 * bidir)


def us_per_op(size, busbw):
    """An np-2 allreduce's time per op from its busbw (busbw = algbw at n = 2)."""
    return size / (busbw * 1e3) if busbw else None


def op_time_rows(s):
    """Where the time of an op on hvd_mem_alloc buffers goes, size by size, each column the
    median of its per-invocation figures: hvdc's op; the limit's op (one meeting of the two
    processes per op); the same with the second meeting an API call needs (shm_limit's sync);
    what hvdc spends beyond the limit; hvdc's 4 KiB op on those buffers, whose data work is
    next to nothing: its per-op cost; what the target (80% of the limit) leaves an op beyond
    the synced limit; and the better Open MPI's 4 KiB op less the meeting the synced limit
    already counts: what the best library here spends per op besides its data. Up to 4 MiB,
    where that cost is a part of the op to reckon with."""
    rows = []
    per_op = s.median("latency_shared")
    for size in (size for size in ONE_HOST_SIZES if size <= 4 * MIB):
        def time_of(name, size=size):
            return s.median_over(lambda i: us_per_op(size, s.at(name, size, i)))

        def beyond(i, size=size):
            h = us_per_op(size, s.at("shared", size, i))
            lim = us_per_op(size, s.at("limit_busbw", size, i))
            return h - lim if h and lim else None
        h, lim, synced = time_of("shared"), time_of("limit_busbw"), time_of("synced_busbw")
        if not (h and lim):
            continue
        rows.append([size_label(size), fmt(h), fmt(lim), fmt(synced),
                     fmt(s.median_over(beyond)), fmt(per_op),
                     fmt(s.median_over(lambda i, size=size: target_allowance(s, i, size))),
                     fmt(s.median_over(lambda i, size=size: mpi_op_floor(s, i, size)))])
    return rows


def target_allowance(s, i, size):
    """What the target of invocation i (80% of its limit) leaves an op beyond the limit with
    the second meeting an API call needs: the time a library may spend per op on everything
    else (the call, agreeing on the op, completing it)."""
    lim, synced = s.at("limit_busbw", size, i), s.at("synced_busbw", size, i)
    if not (lim and synced):
        return None
    return us_per_op(size, 0.8 * lim) - us_per_op(size, synced)


def mpi_op_floor(s, i, size):
    """The better Open MPI's 4 KiB allreduce in invocation i less one meeting of the two
    processes (shm_limit's sync at this size), which the synced limit already counts: what the
    best MPI here spends per op besides the data work and the meetings."""
    better = smallest(s.at("latency_ob1", "value", i), s.at("latency_ucx", "value", i))
    sync = s.at("sync_us", size, i)
    return better - sync if better and sync is not None else None


OP_TIME_HEADER = ["size", "hvdc, us", "limit, us", "limit with one more sync, us",
                  "hvdc beyond the limit, us", "hvdc's 4 KiB op on these buffers, us",
                  "the target leaves per op beyond the synced limit, us",
                  "Open MPI's 4 KiB op less one meeting, us"]


def op_time_section(s):
    rows = op_time_rows(s)
    if not rows:
        return []
    syncs = [v for by_size in s.data.get("sync_us", {}).values() for v in by_size.values()]
    sync_us = statistics.median(syncs) if syncs else None
    lines = ["", "## Where an op's time goes on hvd_mem_alloc buffers, in place", "",
             "Each column is the median of its per-invocation figures. The limit's loop meets "
             "once per op; an allreduce called through an API must meet twice (every input "
             "ready before anyone reads it, every result written before anyone returns): one "
             "more meeting of the two processes costs %s us here (shm_limit's sync). Set what "
             "hvdc spends beyond the limit beside its 4 KiB op's time, whose data work is next "
             "to nothing: that is hvdc's cost per op, which the data work does not hide at "
             "these sizes. The last two columns pair each invocation's target with its Open "
             "MPI: where the target leaves an op less time than the better Open MPI spends on "
             "its own 4 KiB op besides one meeting, the target asks of hvdc a cost per op "
             "below that of the best library measured on this machine, and that cost, not the "
             "memory, is what stops it." % fmt(sync_us, 3), ""]
    return lines + table_lines(OP_TIME_HEADER, rows)


def table_lines(header, rows):
    """A markdown table."""
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(row) + " |" for row in rows])


HEADER = ["workload", "hvdc", "Open MPI ob1", "Open MPI pml ucx", "limit",
          "ratio vs better MPI", "target", "met?"]


def probes_by_invocation(series, name):
    """A probe's figures (one per step) grouped by invocation."""
    by_invocation = {}
    for values in series.data.get(name, {}).values():
        for i, v in values.items():
            by_invocation.setdefault(i, []).append(v)
    return by_invocation


def invocation_ranges(by_invocation, fmt, flagged, flag):
    """'1: low-high; 2: ...', each range followed by `flag` where flagged(low, high)."""
    parts = []
    for i in sorted(by_invocation):
        low, high = min(by_invocation[i]), max(by_invocation[i])
        parts.append("%d: " % i + fmt % (low, high) + (flag if flagged(low, high) else ""))
    return "; ".join(parts)


def steadiness_line(series):
    """Open MPI's 4 KiB round trip per invocation (min-max over its runs). An invocation whose
    slowest probe is over twice the run's fastest was taken while the machine was slowed down
    (another job, a noisy neighbour): its figures deserve suspicion."""
    by_invocation = probes_by_invocation(series, "probe_mpi_4k_us")
    if not by_invocation:
        return None
    fastest = min(min(v) for v in by_invocation.values())
    parts = invocation_ranges(by_invocation, "%.2f-%.2f us",
                              lambda low, high: high > 2 * fastest, " (disturbed)")
    return ("- steadiness: Open MPI's 4 KiB round trip, timed by every hvdc_bench run, per "
            "invocation: " + parts)


def line_latency_line(series):
    """The two CPUs' cache-line round trip before each step, per invocation (min-max). The host
    of a VM moves its virtual CPUs: on one VM of this kind it measured about 40, 90 and 500 ns
    in turn, and a small op's meetings cost several round trips, so an invocation whose probes
    differ by over 1.5x was taken across such phases."""
    by_invocation = probes_by_invocation(series, "line_ns")
    if not by_invocation:
        return None
    parts = invocation_ranges(by_invocation, "%.0f-%.0f ns",
                              lambda low, high: high > 1.5 * low, " (phases changed)")
    return ("- the two CPUs' cache-line round trip (`bench/line_latency`, before every step), per "
            "invocation: " + parts + ". The host moves a VM's CPUs (40, 90 and 500 "
            "ns were measured on one VM of this kind within an hour); every meeting in shared "
            "memory costs at least one round trip, so the small ops' figures move with it.")


def markdown(machine, table, runs, skipped, failures, steadiness=None, sections=()):
    lines = ["# hvdc beside Open MPI: np 2, float32 sum allreduce (bench/compare.sh)", "",
             "- date: %s; commit: %s" % (machine["date_utc"], machine["commit"]),
             "- machine: %s, %s cores, %s GiB memory, Linux %s" % (
                 machine["cpu"], machine["cores"], machine["memory_gib"], machine["kernel"]),
             "- %s; UCX %s" % (machine["open_mpi"], machine["ucx"]),
             "- command: `%s`; each figure is the median of %d invocation(s)" % (
                 machine["command"], runs),
             "- load average at start / end: %s / %s (other jobs on the machine make every "
             "figure noisy)" % (machine["load_at_start"], machine.get("load_at_end", "?")),
             *([steadiness] if steadiness else []),
             "- busbw = algbw x 2(n-1)/n. hvdc is `hvdc_bench` (MPI only bootstraps it); Open MPI "
             "is `hvdc_bench --mpi-only` under `--mca pml ob1` and under `--mca pml ucx --mca "
             "pml_ucx_tls any --mca pml_ucx_devices any`. The limit is `shm_limit`: two "
             "processes reduce halves of one shared segment in place, the best of one pass with "
             "normal stores, one with non-temporal stores and 16 KiB blocks reduced then copied, "
             "as busbw; its cma figure is the same with private buffers "
             "reached through process_vm_readv/writev. A heap model step's limit is "
             "`hvdc_model_step`'s limit-staged: the same tensors, each rank copying the half its "
             "peer reduces into a shared stage and the peer's results out of it (1 MiB windows), "
             "no engine: the fewest copies when the processes cannot map each other's buffers.",
             "- the ratio and met? columns pair each invocation's figures side by side (hvdc "
             "against that invocation's MPI, limit and target) and give the median of those "
             "ratios; met? shows it against the target (>= 1.00x: met). The other cells are "
             "medians of each figure alone, and the target column is computed from them.", ""]
    lines += table_lines(HEADER, table)
    lines += list(sections)
    if skipped:
        lines += ["", "Two hosts skipped: " + skipped]
    if failures:
        lines += ["", "Failed measurements (their cells are empty):", ""]
        lines += ["- " + f for f in failures]
    lines.append("")
    return "\n".join(lines)


def write_csv(path, series):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["series", "size_bytes", "invocation", "value"])
        for name in sorted(series.data):
            for key in sorted(series.data[name], key=str):
                for i, v in sorted(series.data[name][key].items()):
                    w.writerow([name, key if key != "value" else "", i, v])


def report(out):
    machine = read_json(os.path.join(out, "machine.json"))
    machine["load_at_end"] = load_average()
    series = collect(os.path.join(out, "raw"))
    invocations = {i for d in series.data.values() for k in d.values() for i in k}
    table = one_host_rows(series) + limit_rows(series) + model_rows(series)
    table += multihost_rows(series)

    def text_of(name):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            return ""
        with open(path, encoding="utf-8") as f:
            return f.read().strip()

    skipped = text_of("raw/multihost-skipped.txt")
    failures = [l for l in text_of("failures.txt").splitlines() if l]
    doc = {"machine": machine, "invocations": len(invocations), "header": HEADER, "table": table,
           "raw": {n: {str(k): v for k, v in d.items()} for n, d in series.data.items()},
           "median": {n: {str(k): statistics.median(v.values()) for k, v in d.items()}
                      for n, d in series.data.items()},
           "multihost_skipped": skipped, "failures": failures}
    with open(os.path.join(out, "compare.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    write_csv(os.path.join(out, "compare.csv"), series)
    steadiness = "\n".join(l for l in (steadiness_line(series), line_latency_line(series)) if l)
    text = markdown(machine, table, len(invocations), skipped, failures, steadiness or None,
                    op_time_section(series))
    with open(os.path.join(out, "compare.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)


def main(argv):
    if len(argv) >= 3 and argv[1] == "machine":
        record_machine(argv[2], argv[3:])
    elif len(argv) == 3 and argv[1] == "report":
        report(argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
