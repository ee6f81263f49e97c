#!/usr/bin/env python3
"""Checks the exported interface of the built libhvdc shared library.

Usage: check_symbols.py LIBRARY HEADER [CONSUMER_SOURCE...]

- `nm -D --defined-only LIBRARY` lists only hvd_* symbols (plus the version node HVDC_0), each
  versioned HVDC_0 and each declared in HEADER;
- every function declared in HEADER is exported as a function;
- every declaration in HEADER carries HVDC_API (default visibility);
- `readelf -d LIBRARY` shows SONAME libhvdc.so.0 and no NEEDED libmpi*;
- if CONSUMER_SOURCEs are given, together they call every declared function (the ABI consumer test's promise).

Prints one FAIL line per failed check and `symbols: N passed, M failed`; exits 1 on any failure,
77 (meson's "skipped") if nm or readelf is missing.
"""

import re
import shutil
import subprocess
import sys

EXPECTED_SONAME = "libhvdc.so.0"
VERSION_NODE = "HVDC_0"


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}")
        return ok


def strip_c_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_declarations(header_text):
    """Returns [(name, has_api_macro)] for every function declared in the header."""
    text = strip_c_comments(header_text)
    # Preprocessor lines (with continuations) are not declarations.
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    decls = []
    for statement in text.split(";"):
        # Only what follows the last brace: enum bodies and extern "C" { end before it.
        tail = re.split(r"[{}]", statement)[-1].strip()
        if not tail or tail.startswith("typedef"):
            continue
        m = re.fullmatch(r"(HVDC_API\s+)?[A-Za-z_][\w\s\*]*?\b(hvd_\w+)\s*\((.*)\)", tail, re.S)
        if m:
            decls.append((m.group(2), m.group(1) is not None))
    return decls


def run_tool(args):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        print(f"FAIL: {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
        return None
    return result.stdout


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    library, header = argv[1], argv[2]
    consumers = argv[3:]
    for tool in ("nm", "readelf"):
        if shutil.which(tool) is None:
            print(f"symbols: {tool} not found; skipped")
            return 77

    checks = Checks()
    with open(header, encoding="utf-8") as f:
        decls = header_declarations(f.read())
    declared = [name for name, _ in decls]
    checks.check(len(declared) > 0, f"{header} declares functions")
    checks.check(len(set(declared)) == len(declared), "no function is declared twice")
    for name, has_api in decls:
        checks.check(has_api, f"{name} is declared with HVDC_API (otherwise it is hidden)")

    # ---- nm -D --defined-only ------------------------------------------------------------
    nm_out = run_tool(["nm", "-D", "--defined-only", library])
    checks.check(nm_out is not None, f"nm -D --defined-only {library} runs")
    exported = {}  # name -> (type letter, version)
    for line in (nm_out or "").splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        kind, symbol = fields[-2], fields[-1]
        name, _, version = symbol.partition("@")
        exported[name] = (kind, version.lstrip("@"))
    for name in sorted(exported):
        kind, version = exported[name]
        if name == VERSION_NODE:
            checks.check(kind == "A", f"{VERSION_NODE} is the version node (type A, got {kind})")
            continue
        checks.check(name.startswith("hvd_"), f"exported symbol '{name}' does not start with hvd_")
        if name.startswith("hvd_"):
            checks.check(version == VERSION_NODE,
                         f"exported {name} carries version {VERSION_NODE} (got '{version}')")
            checks.check(name in declared, f"exported {name} is declared in {header}")
    for name in declared:
        ok = name in exported and exported[name][0] == "T"
        checks.check(ok, f"{name} (declared in the header) is exported as a function"
                     f" (nm type {exported.get(name, ('missing',))[0]})")

    # ---- readelf -d ----------------------------------------------------------------------
    dyn = run_tool(["readelf", "-d", library])
    checks.check(dyn is not None, f"readelf -d {library} runs")
    sonames = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]*)\]", dyn or "")
    checks.check(sonames == [EXPECTED_SONAME], f"SONAME is {EXPECTED_SONAME} (got {sonames})")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]*)\]", dyn or "")
    checks.check(len(needed) > 0, "readelf -d lists NEEDED entries")
    mpi = [n for n in needed if n.startswith("libmpi")]
    checks.check(not mpi, f"no NEEDED libmpi* (the MPI bootstrap is a plugin); got {mpi}")

    # ---- the C consumer calls everything -------------------------------------------------
    if consumers:
        source = ""
        for consumer in consumers:
            with open(consumer, encoding="utf-8") as f:
                source += strip_c_comments(f.read())
        for name in declared:
            checks.check(re.search(r"\b" + re.escape(name) + r"\s*\(", source) is not None,
                         f"the C consumer calls {name}")

    print(f"symbols: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
