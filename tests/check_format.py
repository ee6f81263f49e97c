#!/usr/bin/env python3
"""Fails when a tracked C/C++ source differs from what clang-format makes of it."""
import pathlib
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
dirs = ["include", "src", "tests", "examples", "bench"]
files = [p for d in dirs for p in sorted((root / d).rglob("*"))
         if p.suffix in {".h", ".c", ".cc", ".hpp", ".cpp"}]
bad = []
for path in files:
    out = subprocess.run(["clang-format", "--style=file", str(path)], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    if out != path.read_text():
        bad.append(str(path.relative_to(root)))
for name in bad:
    print(f"not formatted: {name} (run: clang-format -i {name})")
print(f"format: {len(files) - len(bad)} passed, {len(bad)} failed")
sys.exit(1 if bad else 0)
