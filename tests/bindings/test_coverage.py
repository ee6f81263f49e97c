#!/usr/bin/env python3
"""Unit tests of the header-coverage checker: for each kind of binding, a faithful fixture passes
and a missing function, a wrong constant value, a wrong arity and a wrong field offset are each
reported. Fixtures are generated from the real header (Rust lib.rs and layout output, a Python
ctypes module, C++ calls) or are the real binding mutated (Julia's LibHVDC.jl).

  test_coverage.py SOURCE_ROOT
"""
import pathlib
import re
import sys
import tempfile
import textwrap
import unittest

import coverage
import hvdc_header
import surfaces

ROOT = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else ".").resolve()

# C types of the checked structs' fields as ctypes spell them.
CTYPES = {"void*": "ctypes.c_void_p", "int32_t": "ctypes.c_int32", "uint32_t": "ctypes.c_uint32",
          "uint8_t": "ctypes.c_uint8", "uint16_t": "ctypes.c_uint16",
          "uint64_t": "ctypes.c_uint64", "double": "ctypes.c_double",
          "int64_t*": "ctypes.c_void_p", "hvd_done_fn": "ctypes.c_void_p",
          "hvd_alloc_fn": "ctypes.c_void_p", "hvd_device_t": "hvd_device_t",
          "hvd_dl_dtype_t": "hvd_dl_dtype_t"}


def c_field_types(header_text):
    """struct -> [(field, C type)] for the header's structs."""
    code = hvdc_header.strip_comments(header_text)
    out = {}
    for m in re.finditer(r"typedef\s+struct\s+\w+\s*\{([^}]*)\}\s*(\w+)\s*;", code):
        fields = []
        for decl in (d.strip() for d in m.group(1).split(";") if d.strip()):
            words = decl.replace("const ", "").replace("*", "* ").split()
            fields.append((words[-1], "".join(words[:-1])))
        out[m.group(2)] = fields
    return out


class CoverageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.header_text = (ROOT / "include" / "hvdc.h").read_text()
        cls.header = hvdc_header.parse_header(cls.header_text)
        cls.c_layouts, _ = hvdc_header.c_truth(cls.header, ROOT / "include",
                                               hvdc_header.compiler_from_env())
        cls.tmp = tempfile.TemporaryDirectory(prefix="hvdc-coverage-test-")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def problems(self, surface):
        return coverage.compare(self.header, self.c_layouts, surface)

    def assert_reported(self, surface, *needles):
        text = "\n".join(self.problems(surface))
        for needle in needles:
            self.assertIn(needle, text)

    # ---- Rust: a lib.rs and a layout printout generated from the header ----------------------

    def rust_lib_rs(self):
        lines = [f"pub const {n}: i32 = {v};" for n, v in self.header.constants.items()]
        for name, arity in self.header.functions.items():
            params = ", ".join(f"a{i}: *mut c_void" for i in range(arity))
            lines.append(f"    pub fn {name}({params}) -> hvd_status_t;")
        return "\n".join(lines)

    def rust_layout(self):
        lines = []
        for name in hvdc_header.CHECKED_STRUCTS:
            lines.append(f"struct {name} size {self.c_layouts[name].size}")
            lines += [f"field {name} {f} {o}" for f, o in self.c_layouts[name].offsets.items()]
        return "\n".join(lines)

    def test_rust_fixture_passes(self):
        self.assertEqual(self.problems(surfaces.rust_surface(self.rust_lib_rs(),
                                                             self.rust_layout())), [])

    def test_rust_mismatches_are_reported(self):
        lib_rs = self.rust_lib_rs()
        lib_rs = lib_rs.replace("pub fn hvd_barrier_async(", "pub fn hvd_barrier_async_x(")
        lib_rs = lib_rs.replace("HVD_ERR_TIMEOUT: i32 = -11;", "HVD_ERR_TIMEOUT: i32 = -12;")
        lib_rs = lib_rs.replace("pub fn hvd_wait(a0: *mut c_void)",
                                "pub fn hvd_wait(a0: *mut c_void, a1: u64)")
        layout = self.rust_layout().replace("field hvd_tensor_t shape 16",
                                            "field hvd_tensor_t shape 12")
        self.assert_reported(surfaces.rust_surface(lib_rs, layout),
                             "rust: function hvd_barrier_async is missing",
                             "rust: function hvd_barrier_async_x is not in the header",
                             "rust: constant HVD_ERR_TIMEOUT = -12, the header has -11",
                             "rust: hvd_wait takes 2 arguments, the header 1",
                             "rust: hvd_tensor_t.shape is at offset 12, C's is at 16")

    # ---- Python: a ctypes module generated from the header -----------------------------------

    def python_module(self, package, mutate=lambda text: text):
        structs = c_field_types(self.header_text)
        lines = ["import ctypes"]
        lines += [f"{n} = {v}" for n, v in self.header.constants.items()]
        for name in ("hvd_device_t", "hvd_dl_dtype_t", *hvdc_header.CHECKED_STRUCTS):
            fields = ", ".join(f'("{f}", {CTYPES[t]})' for f, t in structs[name])
            lines.append(f"class {name}(ctypes.Structure):\n    _fields_ = [{fields}]")
        lines.append("FUNCTIONS = {")
        lines += [f'    "{n}": (ctypes.c_int32, [{", ".join(["ctypes.c_void_p"] * a)}]),'
                  for n, a in self.header.functions.items()]
        lines.append("}")
        pkg = pathlib.Path(self.tmp.name) / package
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "_ffi.py").write_text(mutate("\n".join(lines) + "\n"))
        return surfaces.python_surface(pkg.parent, self.header, module=f"{package}._ffi")

    def test_python_fixture_passes(self):
        self.assertEqual(self.problems(self.python_module("fake_ok")), [])

    def test_python_mismatches_are_reported(self):
        def mutate(text):
            text = re.sub(r'\n    "hvd_join": .*', "", text)
            text = text.replace("\nHVD_OP_MAX = 4\n", "\nHVD_OP_MAX = 2\n")
            text = text.replace('"hvd_handle_free": (ctypes.c_int32, [ctypes.c_void_p])',
                                '"hvd_handle_free": (ctypes.c_int32, [])')
            return text.replace('("dtype", ctypes.c_int32), ("ndim"',
                                '("dtype", ctypes.c_int64), ("ndim"')
        self.assert_reported(self.python_module("fake_bad", mutate),
                             "python: function hvd_join is missing",
                             "python: constant HVD_OP_MAX = 2, the header has 4",
                             "python: hvd_handle_free takes 0 arguments, the header 1",
                             "python: hvd_tensor_t.ndim is at offset 16, C's is at 12")

    # ---- Julia: the real LibHVDC.jl, then mutated --------------------------------------------

    def julia_text(self):
        return (ROOT / "bindings" / "julia" / "HVDC.jl" / "src" / "LibHVDC.jl").read_text()

    def test_julia_binding_passes(self):
        self.assertEqual(self.problems(surfaces.julia_surface(self.julia_text())), [])

    def test_julia_mismatches_are_reported(self):
        text = self.julia_text()
        text = re.sub(r"\nhvd_timeline_stop\(\) = [^\n]*", "", text)
        text = text.replace("const HVD_BOOL = Int32(9)", "const HVD_BOOL = Int32(1)")
        text = text.replace("@ccall libhvdc.hvd_rank()", "@ccall libhvdc.hvd_rank(x::Int32)")
        text = text.replace("    reserved::UInt32\n", "    reserved::UInt64\n")
        self.assert_reported(surfaces.julia_surface(text),
                             "julia: function hvd_timeline_stop is missing",
                             "julia: constant HVD_BOOL = 1, the header has 9",
                             "julia: hvd_rank takes 1 arguments, the header 0",
                             "julia: hvd_stats_t.coordinator_requests is at offset 16, C's is at 8",
                             "julia: sizeof hvd_stats_t is 96, C's is 88")

    def test_julia_layout_follows_c_alignment(self):
        text = textwrap.dedent("""\
            struct inner
                a::UInt8
                b::UInt16
            end
            struct outer
                x::UInt8
                y::inner
                z::Ptr{Cvoid}
                w::Int32
            end
            """)
        layouts = surfaces.julia_layouts(surfaces.julia_structs(text))
        self.assertEqual((layouts["inner"].size, layouts["inner"].offsets), (4, {"a": 0, "b": 2}))
        self.assertEqual(layouts["outer"].size, 24)
        self.assertEqual(layouts["outer"].offsets, {"x": 0, "y": 2, "z": 8, "w": 16})

    # ---- C++: calls of every function, then one left out, one wrong, one not wrapped ---------

    def cxx_source(self):
        return "\n".join(f"  {n}({', '.join(['x'] * a)});" for n, a in
                         self.header.functions.items())

    def test_cxx_fixture_passes(self):
        self.assertEqual(self.problems(surfaces.cxx_surface(self.header, [self.cxx_source(),
                         " ".join(self.header.constants)])), [])

    def test_cxx_mismatches_are_reported(self):
        source = self.cxx_source().replace("  hvd_abort(x);", "  // hvd_abort(x);")
        source = source.replace("hvd_test(x, x);", "hvd_test(x);")
        constants = " ".join(c for c in self.header.constants if c != "HVD_CFG_IFACE")
        surface = surfaces.cxx_surface(self.header, [source, constants])
        self.assert_reported(surface, "c++: function hvd_abort is missing",
                             "c++: hvd_test takes 1 arguments, the header 2",
                             "c++: constant HVD_CFG_IFACE is missing")
        surface.not_wrapped = {"hvd_abort": "a reason", "hvd_init": "not true"}
        problems = "\n".join(self.problems(surface))
        self.assertNotIn("hvd_abort is missing", problems)
        self.assertIn("c++: hvd_init is listed as not wrapped but is used", problems)

    def test_cxx_string_literals_do_not_count_as_use(self):
        source = self.cxx_source().replace("  hvd_abort(x);", '  f("hvd_abort");')
        self.assert_reported(surfaces.cxx_surface(self.header, [source]),
                             "c++: function hvd_abort is missing")


if __name__ == "__main__":
    unittest.main()
