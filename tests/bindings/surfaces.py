"""What each binding declares of the C ABI, read from its own source (or, for Python and Rust
layouts, from the binding at run time): a Surface of functions with arity, constants with values,
and struct layouts. coverage.py compares each Surface with the header."""
import ctypes
import dataclasses
import importlib
import os
import re
import subprocess
import sys

from hvdc_header import Layout, balanced_span, split_top_level, strip_comments

# C++ wraps every C function; one it deliberately leaves out goes here with the reason.
CXX_NOT_WRAPPED = {}
# Families of constants the C++ API re-expresses as its own enums (the others it uses as they
# come from hvdc.h, which hvdc.hpp includes): each member must appear in the C++ headers.
CXX_ENUM_FAMILIES = ("HVD_OP_", "HVD_FEATURE_", "HVD_CFG_")
CXX_DTYPES = ("HVD_UINT8", "HVD_INT8", "HVD_UINT16", "HVD_INT16", "HVD_INT32", "HVD_INT64",
              "HVD_FLOAT16", "HVD_FLOAT32", "HVD_FLOAT64", "HVD_BOOL", "HVD_BFLOAT16")


@dataclasses.dataclass
class Surface:
    name: str
    functions: dict  # name -> arity, or None where only the name can be checked
    constants: dict  # name -> value, or None where only the name can be checked
    layouts: dict  # struct name -> Layout
    not_wrapped: dict = dataclasses.field(default_factory=dict)  # function -> reason
    # Header constants the binding need not declare itself (with the reason).
    constants_exempt: dict = dataclasses.field(default_factory=dict)


# ---- C++ --------------------------------------------------------------------------------------

def cxx_surface(header, sources):
    """sources: the text of hvdc.hpp and the headers it includes."""
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', strip_comments("\n".join(sources)))
    functions = {}
    for name in header.functions:
        arities = set()
        for m in re.finditer(rf"\b{name}\b(\s*\()?", code):
            if m.group(1):  # a call: count its arguments
                end = balanced_span(code, m.end() - 1)
                arities.add(len(split_top_level(code[m.end():end - 1])))
            else:  # passed as a function pointer: its arity is the compiler's business
                arities.add(None)
        if arities:
            calls = {a for a in arities if a is not None}
            functions[name] = calls.pop() if len(calls) == 1 else (None if not calls else -1)
    enum_constants = [c for c in header.constants
                      if c.startswith(CXX_ENUM_FAMILIES) or c in CXX_DTYPES]
    constants = {c: header.constants[c] for c in enum_constants if re.search(rf"\b{c}\b", code)}
    exempt = {c: "used from hvdc.h, which hvdc.hpp includes" for c in header.constants
              if c not in enum_constants}
    # The C++ API uses the C structs themselves.
    return Surface("c++", functions, constants, None, dict(CXX_NOT_WRAPPED), exempt)


# ---- Julia ------------------------------------------------------------------------------------

JULIA_PRIMITIVES = {
    "Int8": 1, "UInt8": 1, "Bool": 1, "Cchar": 1, "Cuchar": 1,
    "Int16": 2, "UInt16": 2, "Float16": 2, "Cshort": 2, "Cushort": 2,
    "Int32": 4, "UInt32": 4, "Float32": 4, "Cint": 4, "Cuint": 4, "Cfloat": 4,
    "Int64": 8, "UInt64": 8, "Float64": 8, "Int": 8, "UInt": 8, "Csize_t": 8, "Cssize_t": 8,
    "Clonglong": 8, "Culonglong": 8, "Cdouble": 8, "Cstring": 8, "Ptr": 8,
}


def julia_structs(code):
    """struct name -> [(field, type)] for every `struct ... end` block."""
    structs = {}
    for m in re.finditer(r"^(?:mutable\s+)?struct\s+(\w+)\s*\n(.*?)^end\b", code, re.S | re.M):
        structs[m.group(1)] = re.findall(r"^\s*(\w+)::([\w{}]+)\s*$", m.group(2), re.M)
    return structs


def julia_layouts(structs):
    """C layouts of Julia isbits structs: natural alignment, padding as C does it."""
    memo = {}  # struct name -> (Layout, alignment)

    def size_align(type_name):
        base = type_name.split("{")[0]
        if base in JULIA_PRIMITIVES:
            return JULIA_PRIMITIVES[base], JULIA_PRIMITIVES[base]
        if type_name not in memo:
            if type_name not in structs:
                raise ValueError(f"unknown Julia field type {type_name}")
            offset, align, offsets = 0, 1, {}
            for field, ftype in structs[type_name]:
                fsize, falign = size_align(ftype)
                offset = -(-offset // falign) * falign
                offsets[field] = offset
                offset += fsize
                align = max(align, falign)
            memo[type_name] = (Layout(-(-offset // align) * align, offsets), align)
        return memo[type_name][0].size, memo[type_name][1]

    for name in structs:
        size_align(name)
    return {name: memo[name][0] for name in structs}


def julia_surface(text):
    code = re.sub(r"#[^\n]*", "", text)
    functions = {}
    for m in re.finditer(r"@ccall\s+\w+\.(hvd_\w+)\s*\(", code):
        end = balanced_span(code, m.end() - 1)
        functions[m.group(1)] = len(split_top_level(code[m.end():end - 1]))
    constants = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^const\s+(HVDC?_\w+)\s*=\s*(?:\w+\()?\s*(-?\d+)\s*\)?\s*$", code, re.M)}
    return Surface("julia", functions, constants, julia_layouts(julia_structs(code)))


# ---- Python -----------------------------------------------------------------------------------

def python_surface(package_dir, header, module="hvdc._ffi"):
    """Imports the binding's ctypes module from package_dir (HVDC_LIBRARY must name the library)."""
    sys.path.insert(0, str(package_dir))
    try:
        ffi = importlib.import_module(module)
    finally:
        sys.path.remove(str(package_dir))
    functions = {name: len(argtypes) for name, (_, argtypes) in ffi.FUNCTIONS.items()}
    constants = {name: getattr(ffi, name) for name in header.constants if hasattr(ffi, name)}
    layouts = {}
    for name in header.structs:
        struct = getattr(ffi, name, None)
        if isinstance(struct, type) and issubclass(struct, ctypes.Structure):
            offsets = {f[0]: getattr(struct, f[0]).offset for f in struct._fields_}
            layouts[name] = Layout(ctypes.sizeof(struct), offsets)
    return Surface("python", functions, constants, layouts)


# ---- Rust -------------------------------------------------------------------------------------

def rust_declarations(text):
    code = strip_comments(text)
    functions = {}
    for m in re.finditer(r"\bpub\s+fn\s+(hvd_\w+)\s*\(", code):
        end = balanced_span(code, m.end() - 1)
        functions[m.group(1)] = len(split_top_level(code[m.end():end - 1]))
    constants = {m.group(1): int(m.group(2).replace("_", "")) for m in re.finditer(
        r"\bpub\s+const\s+(HVDC?_\w+)\s*:\s*[\w:]+\s*=\s*(-?[\d_]+)\s*(?:as\s+\w+\s*)?;", code)}
    return functions, constants


def rust_layout_output(workspace, lib_dir):
    """Runs the binding's layout example; returns its stdout."""
    env = dict(os.environ, HVDC_LIB_DIR=str(lib_dir),
               LD_LIBRARY_PATH=f"{lib_dir}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    return subprocess.run(
        ["cargo", "run", "--offline", "--quiet", "--manifest-path",
         str(workspace / "Cargo.toml"), "--example", "layout"],
        env=env, check=True, capture_output=True, text=True).stdout


def rust_surface(lib_rs_text, layout_output):
    from hvdc_header import parse_layout_lines
    functions, constants = rust_declarations(lib_rs_text)
    return Surface("rust", functions, constants, parse_layout_lines(layout_output))
