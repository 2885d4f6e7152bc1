"""`import dpmem_ref` and `dpmem --help` stay light (issue 25): the face imports its public
names on first use (PEP 562), and the command line imports a subcommand's machinery only
when that subcommand runs."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import dpmem_ref

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("mpmath", "numpy", "sqlite3", "z3", "tomllib", "attrs", "fractions", "decimal", "hmac", "secrets", "json")


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_importing_the_face_imports_no_part_of_the_kernel() -> None:
    modules = loaded_after("import dpmem_ref")
    assert [m for m in modules if m.startswith("dpmem_ref")] == ["dpmem_ref"]
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []


def test_every_public_name_is_its_defining_modules_object() -> None:
    tree = ast.parse((ROOT / "dpmem_ref" / "__init__.py").read_text())
    guarded = next(node for node in tree.body if isinstance(node, ast.If))  # the TYPE_CHECKING block
    imported = {
        alias.name: node.module for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert imported == dpmem_ref._EXPORTS
    assert sorted(imported) == sorted(dpmem_ref.__all__)
    for name, module in imported.items():
        assert getattr(dpmem_ref, name) is getattr(importlib.import_module(module), name)
    namespace: dict[str, object] = {}
    exec("from dpmem_ref import *", namespace)  # noqa: S102
    assert set(namespace) - {"__builtins__"} == set(dpmem_ref.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        dpmem_ref.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert str(error) == "module 'dpmem_ref' has no attribute 'no_such_name'"
    else:
        raise AssertionError("no AttributeError")
