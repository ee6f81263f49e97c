#!/usr/bin/env python3
"""Prints one closing line for a meson test log: 'hvdc tests: N passed, M failed, K skipped'."""
import json
import sys

counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
failed_names = []
with open(sys.argv[1]) as log:
    for line in log:
        result = json.loads(line)
        r = result.get("result", "FAIL")
        if r == "OK":
            counts["OK"] += 1
        elif r == "SKIP":
            counts["SKIP"] += 1
        else:
            counts["FAIL"] += 1
            failed_names.append(result.get("name", "?"))
for name in failed_names:
    print(f"failed: {name}")
print(f"hvdc tests: {counts['OK']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
sys.exit(1 if counts["FAIL"] or counts["OK"] == 0 else 0)
