#!/usr/bin/env python3
"""README.md's HVDC_* table is generated from the registry (hvdc-info --markdown).
readme_knobs.py HVDC_INFO README [--write]: checks the table (exit 1 if stale) or rewrites it."""
import subprocess
import sys

BEGIN, END = "<!-- knobs:begin -->\n", "<!-- knobs:end -->\n"
info, readme = sys.argv[1], sys.argv[2]
table = subprocess.run([info, "--markdown"], capture_output=True, text=True, check=True).stdout
text = open(readme).read()
head, rest = text.split(BEGIN, 1)
_, tail = rest.split(END, 1)
fresh = head + BEGIN + table + END + tail
if "--write" in sys.argv:
    open(readme, "w").write(fresh)
elif fresh != text:
    print("README.md's settings table is stale: run scripts/readme_knobs.py build/src/hvdc-info README.md --write")
    print("readme table: 0 passed, 1 failed")
    sys.exit(1)
else:
    print("readme table: 1 passed, 0 failed")
