#!/usr/bin/env python3
"""Checks scripts/summarize_tests.py on fake meson logs: a GoogleTest binary that passes with
skipped cases counts each of them as a skip, an exit-77 test counts once with its reason, and a
failure fails the summary.
Usage: test_summarize_tests.py SUMMARIZE_TESTS_PY"""
import json
import pathlib
import subprocess
import sys
import tempfile

# What a GoogleTest binary prints when two of its three cases call GTEST_SKIP (gtest 1.12).
GTEST_OUTPUT = """[==========] Running 3 tests from 1 test suite.
[ RUN      ] Store.Ipv6Loopback
test_store.cc:359: Skipped
no IPv6 loopback here
[  SKIPPED ] Store.Ipv6Loopback (0 ms)
[ RUN      ] Param/Timeline.Export/1
test_timeline.cc:117: Skipped

[  SKIPPED ] Param/Timeline.Export/1 (0 ms)
[ RUN      ] Store.Works
[       OK ] Store.Works (3 ms)
[==========] 3 tests from 1 test suite ran. (3 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 2 tests, listed below:
[  SKIPPED ] Store.Ipv6Loopback
[  SKIPPED ] Param/Timeline.Export/1
"""


def run_summary(script, results):
    """Runs the script on a log of results; returns (exit status, output lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = pathlib.Path(tmp) / "testlog.json"
        log.write_text("".join(json.dumps(r) + "\n" for r in results))
        done = subprocess.run([sys.executable, script, str(log)], capture_output=True, text=True)
    return done.returncode, done.stdout.splitlines()


def expect(condition, what, lines):
    if not condition:
        print(f"FAIL: {what}; the summary printed:")
        print("\n".join(lines))
        sys.exit(1)


def main():
    script = sys.argv[1]
    unit = {"name": "unit", "result": "OK", "stdout": GTEST_OUTPUT}
    skipped = {"name": "dlpack_layout", "result": "SKIP",
               "stdout": "SKIP: dlpack/dlpack.h not found (Debian: libdlpack-dev)\n"}
    passing = {"name": "symbols", "result": "OK", "stdout": "symbols: ok\n"}

    status, lines = run_summary(script, [unit, skipped, passing])
    expect(status == 0, "skips alone must not fail the run", lines)
    expect(lines[-1] == "hvdc tests: 2 passed, 0 failed, 3 skipped",
           "two gtest skips and one exit-77 skip make 3 skipped", lines)
    expect("skipped: unit / Store.Ipv6Loopback: no IPv6 loopback here" in lines,
           "the gtest skip is listed with its reason", lines)
    expect("skipped: unit / Param/Timeline.Export/1" in lines,
           "a gtest skip without a message is listed by name", lines)
    expect("skipped: dlpack_layout: dlpack/dlpack.h not found (Debian: libdlpack-dev)" in lines,
           "the exit-77 skip is listed with its reason", lines)

    failing = {"name": "mpi-np2", "result": "FAIL", "stdout": "boom\n"}
    status, lines = run_summary(script, [unit, failing])
    expect(status == 1, "a failed test fails the summary", lines)
    expect(lines[-1] == "hvdc tests: 1 passed, 1 failed, 2 skipped", "counts with a failure",
           lines)

    status, lines = run_summary(script, [skipped])
    expect(status == 1, "a run where nothing passed fails the summary", lines)
    print("summarize_tests: ok")


if __name__ == "__main__":
    main()
