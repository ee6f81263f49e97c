"""What include/hvdc.h declares: functions with their arity, integer constants (#define and enum)
with their values, and struct field lists; and C's own layout of the structs, from a small C
program compiled against the header (sizeof/offsetof) that also prints every constant, so the
parsed values are checked by the compiler too."""
import dataclasses
import os
import pathlib
import re
import subprocess
import tempfile

# The structs every binding mirrors; their layouts are compared field by field.
CHECKED_STRUCTS = ("hvd_tensor_t", "hvd_op_args_t", "hvd_stats_t", "hvd_dl_tensor_t")


@dataclasses.dataclass
class Layout:
    size: int
    offsets: dict  # field name -> byte offset, in declaration order


@dataclasses.dataclass
class Header:
    functions: dict  # name -> number of parameters
    constants: dict  # name -> int
    structs: dict  # name -> [field names]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_top_level(text, sep=","):
    """Splits at separators outside (), [], {} and <>; drops empty pieces."""
    text = text.replace("->", "  ")  # a Rust return arrow is not a closing bracket
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def balanced_span(text, open_index):
    """The index just past the bracket that closes the one at open_index."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    closing, depth = pairs[text[open_index]], 0
    for i in range(open_index, len(text)):
        if text[i] == text[open_index]:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced {text[open_index]!r} at offset {open_index}")


def c_arity(params):
    params = params.strip()
    return 0 if params in ("", "void") else len(split_top_level(params))


def parse_header(text):
    code = strip_comments(text)
    functions = {}
    for m in re.finditer(r"\bHVDC_API\b[^;(]*?\b(hvd_\w+)\s*\(", code):
        end = balanced_span(code, m.end() - 1)
        functions[m.group(1)] = c_arity(code[m.end():end - 1])
    constants = {m.group(1): int(m.group(2))
                 for m in re.finditer(r"^\s*#define\s+(HVDC?_\w+)\s+(-?\d+)\s*$", code, re.M)}
    for m in re.finditer(r"\benum\b[^{;]*\{([^}]*)\}", code):
        value = -1
        for entry in split_top_level(m.group(1)):
            name, _, expr = entry.partition("=")
            value = int(expr.strip(), 0) if expr.strip() else value + 1
            constants[name.strip()] = value
    structs = {}
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{([^}]*)\}\s*(\w+)\s*;", code):
        fields = [re.findall(r"\w+", decl)[-1] for decl in m.group(2).split(";") if decl.strip()]
        structs[m.group(3)] = fields
    return Header(functions, constants, structs)


def layout_program(header):
    lines = ["#include <hvdc.h>", "#include <stddef.h>", "#include <stdio.h>", "int main(void) {"]
    for name, fields in header.structs.items():
        lines.append(f'  printf("struct {name} size %zu\\n", sizeof({name}));')
        for field in fields:
            lines.append(f'  printf("field {name} {field} %zu\\n", offsetof({name}, {field}));')
    for name in header.constants:
        lines.append(f'  printf("const {name} %lld\\n", (long long)({name}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def parse_layout_lines(text):
    """Reads `struct <name> size <n>` and `field <struct> <field> <offset>` lines."""
    layouts = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 4 and words[0] == "struct" and words[2] == "size":
            layouts.setdefault(words[1], Layout(0, {})).size = int(words[3])
        elif len(words) == 4 and words[0] == "field":
            layouts.setdefault(words[1], Layout(0, {})).offsets[words[2]] = int(words[3])
    return layouts


def c_truth(header, include_dir, compiler):
    """Compiles and runs the layout program; returns (layouts, constants) as C sees them."""
    with tempfile.TemporaryDirectory(prefix="hvdc-coverage-") as tmp:
        source, exe = pathlib.Path(tmp) / "layout.c", pathlib.Path(tmp) / "layout"
        source.write_text(layout_program(header))
        subprocess.run(compiler + ["-std=c99", "-I", str(include_dir), str(source), "-o", str(exe)],
                       check=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    constants = {w[1]: int(w[2]) for w in (l.split() for l in out.splitlines()) if w[0] == "const"}
    return parse_layout_lines(out), constants


def compiler_from_env():
    return (os.environ.get("CC") or "cc").split()
