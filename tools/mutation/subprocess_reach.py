#!/usr/bin/env python3
"""Tell mutmut which tests reach a function inside a child process (tools/mutation/run.sh).

mutmut learns which tests reach a function by recording calls in the pytest process (its stats
run), and runs only those tests against the function's mutants; a function no test reaches is
booked "no tests" without running anything. Much of this project is tested the way it is used:
`dpmem serve` as a real uvicorn process spoken to over loopback, the CLI as a real process, a
crash test's writer killed by a signal. None of those calls is seen, so the server's modules
came out as "no tests" although their tests kill the mutants: a mutant's name stays in the
environment of the children a test starts, and a child imports the mutated copy (its working
directory is mutmut's `mutants/`), so the child runs the mutant.

This adds the missing edges. Every test file of the selection that starts a process (its text
names subprocess, sys.executable, Popen or the live-server harness) runs once under coverage.py,
with `patch = subprocess` so that its child Python processes are measured too; the lines a
child ran, mapped to the function around them (mutmut's mangled names: `x_f`, `xǁClassǁm`), get
every test of that file, in `mutants/mutmut-stats.json`'s `tests_by_mangled_function_name`.
A whole file, not the one test: a child process does not know which test started it. mutmut
then runs those tests per mutant (cheapest first, stopping at the first failure; root
conftest.py). By default only functions that no test reaches in-process get these edges (the
gap mutmut booked "no tests"): a surviving mutant runs every test it has, and the process-
starting files are the slowest of the suite. Under `--everywhere-under PREFIX` (run.sh:
dpmem_ref/serve/, the code the tests run as a server process) every function gets them, as
under `--all`: a test that starts the server in-process only to stop it reaches `serve_one`
without checking what the served process does.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EDGES = "subprocess-reach.json"  # beside mutmut's stats: the edges added here (record_edges)
STARTS_A_PROCESS = re.compile(r"subprocess|sys\.executable|Popen|serve\.live|LiveServer")


def function_spans(source: str) -> list[tuple[str, int, int]]:
    """(mutmut's mangled name, first line, last line) of every top-level function and method."""
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            spans.append((f"x_{node.name}", node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    spans.append((f"xǁ{node.name}ǁ{item.name}", item.lineno, item.end_lineno or item.lineno))
    return spans


@functools.cache
def _module_spans(module: str) -> list[tuple[str, int, int]]:
    """function_spans of a mutated module's source, read and parsed once per run (every test file
    maps its children's lines onto the same modules)."""
    return function_spans((ROOT / module).read_text(encoding="utf-8"))


def functions_run(lines_by_file: dict[str, set[int]], modules: set[str]) -> set[str]:
    """The mutated modules' functions (mutmut's keys, `dpmem_ref.serve.app.x_build_app`) that
    ran at least one of these lines."""
    reached = set()
    for file, lines in lines_by_file.items():
        parts = Path(file).parts
        if "dpmem_ref" not in parts:
            continue
        module = "/".join(parts[len(parts) - 1 - parts[::-1].index("dpmem_ref") :])
        if module not in modules:
            continue
        dotted = module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name, first, last in _module_spans(module):
            if any(first <= line <= last for line in lines):
                reached.add(f"{dotted}.{name}")
    return reached


def child_lines(test_file: str, deselect: list[str], scratch: Path) -> dict[str, set[int]]:
    """Run one test file under coverage; the lines its child processes ran, by source file."""
    import coverage

    data = scratch / "data"
    data.mkdir()
    rc = scratch / "coveragerc"
    rc.write_text(f"[run]\nparallel = true\nsource = dpmem_ref\npatch = subprocess\ndata_file = {data / 'cov'}\n")
    parent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coverage",
            "run",
            f"--rcfile={rc}",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *deselect,
            test_file,
        ],
        cwd=ROOT,
        env={**os.environ, "COVERAGE_RCFILE": str(rc)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parent.wait()
    lines: dict[str, set[int]] = defaultdict(set)
    for path in data.glob("cov.*"):
        if f".{parent.pid}." in path.name:  # the pytest process itself: mutmut sees that one
            continue
        measured = coverage.CoverageData(basename=str(path))
        measured.read()
        for file in measured.measured_files():
            lines[file].update(measured.lines(file) or ())
    return lines


def record_edges(path: Path, added: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Keep the edges this tool added (function -> tests that reach it only through a child
    process) in `path`, with those recorded before: the pre-pass (tools/mutation/prepass.py) tries
    a function's in-process tests before these, whose recorded durations leave out the set-up that
    starts the child (a live server per module)."""
    recorded: dict[str, set[str]] = {}
    if path.exists():
        recorded = {function: set(tests) for function, tests in json.loads(path.read_text()).items()}
    for function, tests in added.items():
        recorded.setdefault(function, set()).update(tests)
    kept = {function: sorted(tests) for function, tests in sorted(recorded.items()) if tests}
    path.write_text(json.dumps(kept, indent=1) + "\n")
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stats", default=str(ROOT / "mutants" / "mutmut-stats.json"))
    parser.add_argument("--all", action="store_true", help="add edges to functions reached in-process too")
    parser.add_argument(
        "--everywhere-under",
        action="append",
        default=[],
        metavar="PREFIX",
        help="as --all for the functions of modules under PREFIX (dotted or a path)",
    )
    args = parser.parse_args()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    modules = set(config["only_mutate"])
    deselect = [arg for arg in config.get("pytest_add_cli_args", []) if arg != "-x"]  # every test of the file runs
    stats_path = Path(args.stats)
    stats = json.loads(stats_path.read_text())
    known_tests = set(stats["duration_by_test"])
    files = sorted(
        {
            str(path.relative_to(ROOT))
            for selected in config["pytest_add_cli_args_test_selection"]
            for path in (
                [ROOT / selected] if selected.endswith(".py") else sorted((ROOT / selected).rglob("test_*.py"))
            )
            if STARTS_A_PROCESS.search(path.read_text(encoding="utf-8"))
        }
    )
    edges: dict[str, set[str]] = {}
    tests_by_function = stats["tests_by_mangled_function_name"]
    reached_in_process = {function for function, tests in tests_by_function.items() if tests}
    prefixes = tuple(prefix.removesuffix(".py").replace("/", ".") for prefix in args.everywhere_under)
    for test_file in files:
        tests = sorted(test for test in known_tests if test.split("::")[0] == test_file)
        if not tests:
            continue
        with tempfile.TemporaryDirectory(prefix="dpmem-reach-") as scratch:
            reached = functions_run(child_lines(test_file, deselect, Path(scratch)), modules)
        for function in sorted(
            function
            for function in reached
            if args.all or function not in reached_in_process or (prefixes and function.startswith(prefixes))
        ):
            before = set(tests_by_function.get(function, ()))
            tests_by_function[function] = sorted(before | set(tests))
            edges.setdefault(function, set()).update(set(tests) - before)
        print(f"{test_file}: its child processes reach {len(reached)} mutated functions", flush=True)
    stats_path.write_text(json.dumps(stats, indent=2))
    record_edges(stats_path.parent / EDGES, edges)
    added = sum(len(tests) for tests in edges.values())
    print(f"subprocess reach: {added} test-function edges added to {stats_path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
