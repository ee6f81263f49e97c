"""Every name in hvdc.__all__ is used by some test: called, or (classes and constants)
referenced, as hvdc.NAME anywhere under tests/python."""
import ast
import pathlib

import hvdc

TESTS = pathlib.Path(__file__).resolve().parent.parent


def names_used_by_tests():
    used = set()
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "hvdc"):
                used.add(node.attr)
    return used


def test_every_public_name_is_exercised():
    missing = sorted(set(hvdc.__all__) - names_used_by_tests())
    assert not missing, f"no test uses hvdc.{', hvdc.'.join(missing)}"


def test_all_names_exist():
    assert [name for name in hvdc.__all__ if not hasattr(hvdc, name)] == []
