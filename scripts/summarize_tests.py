#!/usr/bin/env python3
"""Prints one closing line for a meson test log: 'hvdc tests: N passed, M failed, K skipped'.

Usage: summarize_tests.py build/meson-logs/testlog.json

A meson test that exits 77 counts as one skip. A GoogleTest binary passes as a whole even when
some of its cases called GTEST_SKIP, so its output is read too: every case it reports as skipped
counts as one more skip, so that no skipped case hides inside a pass. Each skip is listed with its
reason above the closing line.
"""
import json
import re
import sys

# GoogleTest's per-case lines; the summary at the end repeats the names without a time.
GTEST_RUN = re.compile(r"^\[ RUN      \] (\S+)$")
GTEST_SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)$")
GTEST_SKIP_MARK = re.compile(r": Skipped$")


def gtest_skips(output):
    """Returns [(case, reason)] for every case that GoogleTest reports as skipped in output."""
    skips = []
    case_lines = []
    for line in output.splitlines():
        if GTEST_RUN.match(line):
            case_lines = []
            continue
        skipped = GTEST_SKIPPED.match(line)
        if skipped:
            skips.append((skipped.group(1), skip_reason(case_lines)))
            case_lines = []
            continue
        case_lines.append(line)
    return skips


def skip_reason(case_lines):
    """The message after GoogleTest's 'file:line: Skipped' line, or '' when it gave none."""
    for i, line in enumerate(case_lines):
        if GTEST_SKIP_MARK.search(line):
            text = " ".join(l.strip() for l in case_lines[i + 1:] if l.strip())
            return text
    return ""


def exit77_reason(result):
    """The 'SKIP: ...' line a skipped test printed, or its last line of output."""
    lines = (result.get("stdout", "") + "\n" + result.get("stderr", "")).splitlines()
    lines = [l.strip() for l in lines if l.strip()]
    for line in lines:
        if line.startswith("SKIP:"):
            return line[len("SKIP:"):].strip()
    return lines[-1] if lines else ""


def summarize(results):
    """Returns (passed, failed_names, skipped [(name, reason)]) over the log's test results."""
    passed = 0
    failed_names = []
    skipped = []
    for result in results:
        name = result.get("name", "?")
        outcome = result.get("result", "FAIL")
        if outcome == "OK":
            passed += 1
            for case, reason in gtest_skips(result.get("stdout", "")):
                skipped.append((f"{name} / {case}", reason))
        elif outcome == "SKIP":
            skipped.append((name, exit77_reason(result)))
        else:
            failed_names.append(name)
    return passed, failed_names, skipped


def main():
    with open(sys.argv[1]) as log:
        results = [json.loads(line) for line in log if line.strip()]
    passed, failed_names, skipped = summarize(results)
    for name, reason in skipped:
        print(f"skipped: {name}" + (f": {reason}" if reason else ""))
    for name in failed_names:
        print(f"failed: {name}")
    print(f"hvdc tests: {passed} passed, {len(failed_names)} failed, {len(skipped)} skipped")
    return 1 if failed_names or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
