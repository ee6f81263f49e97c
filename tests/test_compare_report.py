#!/usr/bin/env python3
"""Checks bench/compare_report.py's section on where an op's time goes (hvd_mem_alloc buffers):
times per op come from busbw, the "beyond the limit" column pairs each invocation's hvdc with
that invocation's limit before the median, the target's allowance and Open MPI's cost per op
pair each invocation's figures too, sizes without a limit get no row, and the section quotes
the median sync of shm_limit. Also the two-host rows' link: per size, the better of the
stream both ways and that size's exchange, where one was measured. And the line on the two
CPUs' cache-line round trip, per invocation, flagged where it changed by over 1.5x.
Usage: test_compare_report.py COMPARE_REPORT_PY"""
import importlib.util
import sys

KIB, MIB = 1 << 10, 1 << 20


def load(path):
    spec = importlib.util.spec_from_file_location("compare_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def series_of(report):
    """Three invocations. At 64 KiB hvdc takes 2.0, 3.0, 2.5 us against limits of 0.5, 1.5,
    1.0 us: 1.5 us beyond in each. At 256 KiB 4, 5, 6 us against 3.5, 2, 2.5: 0.5, 3 and 3.5
    beyond, median 3.0, where the medians of each figure alone (5 - 2.5) would say 2.5.
    The target (80% of the limit) leaves limit / 0.8 - (limit + 0.1) us: 0.025, 0.275, 0.15 at
    64 KiB (median 0.15) and 0.775, 0.4, 0.525 at 256 KiB (0.53). The better Open MPI's 4 KiB op
    is 0.8, 0.6, 0.5 us, less the sync (0.1, 0.11, 0.12): 0.7, 0.49, 0.38, median 0.49, where
    the medians of each figure alone (ob1 1.0, ucx 0.8, less 0.11) would say 0.69."""
    s = report.Series()
    hvdc_us = {64 * KIB: [2.0, 3.0, 2.5], 256 * KIB: [4.0, 5.0, 6.0]}
    limit_us = {64 * KIB: [0.5, 1.5, 1.0], 256 * KIB: [3.5, 2.0, 2.5]}
    for i in range(3):
        for size in hvdc_us:
            s.add("shared", size, i + 1, size / (hvdc_us[size][i] * 1e3))
            s.add("limit_busbw", size, i + 1, size / (limit_us[size][i] * 1e3))
            s.add("synced_busbw", size, i + 1, size / ((limit_us[size][i] + 0.1) * 1e3))
            s.add("sync_us", size, i + 1, 0.1 + 0.01 * i)
        s.add("latency_shared", "value", i + 1, [1.9, 2.1, 2.0][i])
        s.add("latency_ob1", "value", i + 1, [1.0, 3.0, 0.5][i])
        s.add("latency_ucx", "value", i + 1, [0.8, 0.6, 2.0][i])
    s.add("shared", MIB, 1, 100.0)  # no limit at 1 MiB: no row
    return s


def multihost_series(report):
    """1 MiB has exchanges of 5.0, 4.0, 6.0 GB/s against a stream of 2.0, 2.2, 2.1: its link is
    5.0 (median), and the target max(min(MPI 4.5, 0.9 * 5.0), 0.8 * 5.0) = 4.5. 4 MiB has no
    exchange: its link is the stream's 2.1, the target max(min(1.5, 1.89), 1.68) = 1.68."""
    s = report.Series()
    for i in range(3):
        s.add("mh_hvdc", MIB, i + 1, [2.0, 2.5, 3.0][i])
        s.add("mh_ob1", MIB, i + 1, [4.0, 4.5, 5.0][i])
        s.add("mh_link_exchange", MIB, i + 1, [5.0, 4.0, 6.0][i])
        s.add("mh_hvdc", 4 * MIB, i + 1, 2.0)
        s.add("mh_ob1", 4 * MIB, i + 1, 1.5)
        s.add("mh_link_bidir", "value", i + 1, [2.0, 2.2, 2.1][i])
    return s


def check_multihost(report):
    rows = report.multihost_rows(multihost_series(report))
    got = [(r[4], r[6].split(" (")[0]) for r in rows[1:]]
    want = [("5.00", ">= 4.50"), ("2.10", ">= 1.68")]
    return [] if got == want else ["two-host links and targets %s, want %s" % (got, want)]


def check_line_latency(report):
    """Probes of 90 and 100 ns in invocation 1, 90 and 480 in 2: only 2 changed phases; none,
    no line."""
    s = report.Series()
    for i, (a, b) in enumerate([(90.0, 100.0), (90.0, 480.0)]):
        s.add("line_ns", "hvdc-small-%d" % (i + 1), i + 1, a)
        s.add("line_ns", "limit-%d" % (i + 1), i + 1, b)
    line = report.line_latency_line(s) or ""
    want = "invocation: 1: 90-100 ns; 2: 90-480 ns (phases changed). "
    failures = [] if want in line else ["cache-line probe line %r lacks %r" % (line, want)]
    if report.line_latency_line(report.Series()) is not None:
        failures.append("a run without probes still got a cache-line line")
    return failures


def main(argv):
    report = load(argv[1])
    rows = report.op_time_rows(series_of(report))
    want = [["64 KiB", "2.50", "1.00", "1.10", "1.50", "2.00", "0.15", "0.49"],
            ["256 KiB", "5.00", "2.50", "2.60", "3.00", "2.00", "0.53", "0.49"]]
    failures = []
    if rows != want:
        failures.append("rows %s, want %s" % (rows, want))
    lines = report.op_time_section(series_of(report))
    text = "\n".join(lines)
    if "costs 0.110 us here" not in text:
        failures.append("the section does not quote the median sync, 0.110 us:\n" + text)
    if sum(1 for l in lines if l.startswith("| ")) != 3:  # the header and two sizes
        failures.append("the section's table has not one header and two rows:\n" + text)
    if report.op_time_section(report.Series()):
        failures.append("an empty run still got a section")
    failures += check_multihost(report)
    failures += check_line_latency(report)
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print("ok: op-time rows and section, two-host links, the cache-line probes")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
