#!/usr/bin/env python3
"""Header coverage of every binding (meson test `coverage`, suite `bindings`).

Parses include/hvdc.h, gets C's struct layouts and constant values by compiling a small program
against it, and checks that each binding declares every exported function with the header's
number of parameters, every constant with the header's value, and the structs hvd_tensor_t,
hvd_op_args_t, hvd_stats_t and hvd_dl_tensor_t with C's size and field offsets; and nothing the
header does not have.

  coverage.py SOURCE_ROOT LIBHVDC

A binding whose directory is missing is reported; the test then exits 77 (skipped), which is a
failure under CI=true. Any mismatch exits 1.
"""
import os
import pathlib
import sys

import hvdc_header
import surfaces


def compare_functions(header, surface):
    problems = []
    for name, arity in header.functions.items():
        if name in surface.not_wrapped:
            continue
        if name not in surface.functions:
            problems.append(f"{surface.name}: function {name} is missing")
        elif surface.functions[name] == -1:
            problems.append(f"{surface.name}: {name} is called with different numbers of "
                            f"arguments (the header has {arity})")
        elif surface.functions[name] is not None and surface.functions[name] != arity:
            problems.append(f"{surface.name}: {name} takes {surface.functions[name]} "
                            f"arguments, the header {arity}")
    for name in surface.functions:
        if name not in header.functions:
            problems.append(f"{surface.name}: function {name} is not in the header")
    for name in surface.not_wrapped:
        if name not in header.functions:
            problems.append(f"{surface.name}: not-wrapped entry {name} is not in the header")
        elif name in surface.functions:
            problems.append(f"{surface.name}: {name} is listed as not wrapped but is used")
    return problems


def compare_constants(header, surface):
    problems = []
    for name, value in header.constants.items():
        if name in surface.constants_exempt:
            continue
        if name not in surface.constants:
            problems.append(f"{surface.name}: constant {name} is missing")
        elif surface.constants[name] is not None and surface.constants[name] != value:
            problems.append(f"{surface.name}: constant {name} = {surface.constants[name]}, "
                            f"the header has {value}")
    for name in surface.constants:
        if name not in header.constants:
            problems.append(f"{surface.name}: constant {name} is not in the header")
    return problems


def compare_layouts(header, c_layouts, surface):
    if surface.layouts is None:  # the binding uses the C structs themselves
        return []
    problems = []
    for struct in hvdc_header.CHECKED_STRUCTS:
        c, mine = c_layouts[struct], surface.layouts.get(struct)
        if mine is None:
            problems.append(f"{surface.name}: struct {struct} is missing")
            continue
        if mine.size != c.size:
            problems.append(f"{surface.name}: sizeof {struct} is {mine.size}, C's is {c.size}")
        if list(mine.offsets) != header.structs[struct]:
            problems.append(f"{surface.name}: {struct} has fields {list(mine.offsets)}, "
                            f"the header {header.structs[struct]}")
        for field, offset in c.offsets.items():
            if field in mine.offsets and mine.offsets[field] != offset:
                problems.append(f"{surface.name}: {struct}.{field} is at offset "
                                f"{mine.offsets[field]}, C's is at {offset}")
    return problems


def compare(header, c_layouts, surface):
    return (compare_functions(header, surface) + compare_constants(header, surface) +
            compare_layouts(header, c_layouts, surface))


def collect_surfaces(root, header, lib):
    """Returns ([Surface], [why a binding could not be checked])."""
    found, missing = [], []
    cxx = [root / "include" / "hvdc.hpp", *sorted((root / "include" / "hvdc" / "cxx").glob("*.hpp"))]
    if cxx[0].exists():
        found.append(surfaces.cxx_surface(header, [p.read_text() for p in cxx]))
    else:
        missing.append("c++: include/hvdc.hpp is missing")
    lib_jl = root / "bindings" / "julia" / "HVDC.jl" / "src" / "LibHVDC.jl"
    if lib_jl.exists():
        found.append(surfaces.julia_surface(lib_jl.read_text()))
    else:
        missing.append("julia: bindings/julia/HVDC.jl/src/LibHVDC.jl is missing")
    python_dir = root / "bindings" / "python"
    if (python_dir / "hvdc" / "_ffi.py").exists():
        os.environ["HVDC_LIBRARY"] = str(lib)
        found.append(surfaces.python_surface(python_dir, header))
    else:
        missing.append("python: bindings/python/hvdc/_ffi.py is missing")
    rust_dir = root / "bindings" / "rust"
    lib_rs = rust_dir / "hvdc-sys" / "src" / "lib.rs"
    if not lib_rs.exists():
        missing.append("rust: bindings/rust/hvdc-sys/src/lib.rs is missing")
    elif not any((pathlib.Path(d) / "cargo").exists() for d in os.environ["PATH"].split(":")):
        missing.append("rust: cargo is not on PATH (needed to run the layout example)")
    else:
        layout = surfaces.rust_layout_output(rust_dir, pathlib.Path(lib).parent)
        found.append(surfaces.rust_surface(lib_rs.read_text(), layout))
    return found, missing


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    root, lib = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    header = hvdc_header.parse_header((root / "include" / "hvdc.h").read_text())
    c_layouts, c_constants = hvdc_header.c_truth(header, root / "include",
                                                 hvdc_header.compiler_from_env())
    problems = [f"header: {name} parsed as {value}, C says {c_constants.get(name)}"
                for name, value in header.constants.items() if c_constants.get(name) != value]
    found, missing = collect_surfaces(root, header, lib)
    for surface in found:
        mine = compare(header, c_layouts, surface)
        problems += mine
        print(f"{surface.name}: {len(header.functions)} functions, {len(header.constants)} "
              f"constants, {len(hvdc_header.CHECKED_STRUCTS)} structs: "
              f"{'ok' if not mine else f'{len(mine)} problems'}"
              + (f" ({len(surface.not_wrapped)} not wrapped)" if surface.not_wrapped else ""))
    for line in problems:
        print("FAIL", line)
    for line in missing:
        print("NOT CHECKED", line)
    if problems:
        return 1
    if missing:
        return 1 if os.environ.get("CI") == "true" else 77
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
