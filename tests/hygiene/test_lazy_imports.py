"""`import dpmem_ref` and `dpmem --help` stay light: the face imports its public
names on first use (PEP 562), and the command line imports a subcommand's machinery only
when that subcommand runs."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import dpmem_ref

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("mpmath", "numpy", "sqlite3", "z3", "tomllib", "attrs", "fractions", "decimal", "hmac", "secrets", "json")


def loaded_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_importing_the_face_imports_no_part_of_the_kernel() -> None:
    modules = loaded_after("import dpmem_ref")
    assert [m for m in modules if m.startswith("dpmem_ref")] == [
        "dpmem_ref",
        "dpmem_ref.core",
        "dpmem_ref.core.lazy",
        "dpmem_ref.core.version",  # __version__: one constant
    ]
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []


FACES = ("dpmem_ref", "dpmem_ref.ledger", "dpmem_ref.runtime")  # dpmem_ref.audit re-exports nothing


@pytest.mark.parametrize("face", FACES)
def test_every_public_name_is_its_defining_modules_object(face: str) -> None:
    package = importlib.import_module(face)
    tree = ast.parse(Path(package.__file__ or "").read_text())
    guarded = next(node for node in tree.body if isinstance(node, ast.If))  # the TYPE_CHECKING block
    imported = {
        alias.name: node.module for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    imported.pop("Any", None)  # an annotation of the face's own functions
    exports = {name: module for module, names in package._MODULES.items() for name in names}
    assert imported == exports
    assert set(exports) <= set(package.__all__)
    for name, module in exports.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name)
    namespace: dict[str, object] = {}
    exec(f"from {face} import *", namespace)  # noqa: S102
    assert set(namespace) - {"__builtins__"} == set(package.__all__)


def test_dpmem_help_imports_no_part_of_the_kernel() -> None:
    modules = loaded_after(
        "import contextlib, io, sys\nfrom dpmem_ref.cli import main\nsys.argv = ['dpmem', '--help']\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n    main()"
    )
    kernel = ("mechanism.em", "mechanism.em_sampler", "mechanism.bernoulli", "mechanism.construction", "config", "interface", "turn", "analysis", "ledger.sqlite", "schemas")
    assert [m for m in modules if m.split(".")[0] in ("mpmath", "numpy", "sqlite3", "z3", "tomllib")] == []
    assert "importlib.metadata" not in modules  # looked up by --version only
    assert [m for m in modules if m.startswith(tuple(f"dpmem_ref.{k}" for k in kernel))] == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        dpmem_ref.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert str(error) == "module 'dpmem_ref' has no attribute 'no_such_name'"
    else:
        raise AssertionError("no AttributeError")


def test_a_turn_imports_no_numpy() -> None:
    """numpy speeds up `sample_many` only: the kernel imports it on the first batch."""
    modules = loaded_after(
        "from dpmem_ref import InterfaceState, SeededRandomSource, load_interface_file, run_turn\n"
        "loaded = load_interface_file('examples/figure2.toml')\n"
        "interface = loaded.interface\n"
        "run_turn(interface, InterfaceState.initial(interface), interface.queries[0], loaded.store('M'), SeededRandomSource(0))"
    )
    assert "dpmem_ref.turn.runner" in modules and "numpy" not in modules
