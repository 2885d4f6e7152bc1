#!/usr/bin/env python3
"""Mutation check for the proof suite: every broken kernel must fail `proofs_as_tests`.

Each mutation is a set of regex replacements in the kernel source (dpmem_ref/), each of
which must match exactly once (so a refactored kernel stops the script, never silently
disarms a mutant).
For each one the repository's relevant parts are copied to a fresh temporary directory,
the copy is patched (the real dpmem_ref/ is never touched), and pytest runs the proof
suite there with PYTHONPATH pointing at the copy (checked: `dpmem_ref.__file__` must lie
inside the copy). A mutant is *killed* when the suite fails. An unmutated copy runs
first and must pass, so a kill is never a broken baseline.

Usage:
    .venv/bin/python tools/mutation/semantic_check.py [--jobs 2] [--only NAME ...] [--with-tests] [--paths P ...] [--matrix] [--list]

Prints one line per mutant (killed/SURVIVED, seconds, first failing tests) and the kill
count; exits 0 iff every mutant is killed and the baseline passes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from semantic_mutants import MUTATIONS, Mutation  # noqa: E402  (tools/mutation/semantic_mutants.py: the mutants)

COPY = ["dpmem_ref", "counterexamples", "proofs_as_tests", "tests", "tools", "benchmarks", "examples", "conftest.py", "pyproject.toml"]
IGNORE = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc", ".pytest_cache")


@dataclass
class Outcome:
    name: str
    killed: bool
    seconds: float
    detail: str
    failing: tuple[str, ...] = ()


def make_copy(destination: Path) -> None:
    for entry in COPY:
        source = ROOT / entry
        if source.is_dir():
            shutil.copytree(source, destination / entry, ignore=IGNORE)
        elif source.exists():
            shutil.copy2(source, destination / entry)


def apply(mutation: Mutation, root: Path) -> None:
    for filename, old, new in mutation.patches:
        path = root / "dpmem_ref" / filename
        text = path.read_text()
        pattern = re.compile(old, flags=re.MULTILINE)
        count = len(pattern.findall(text))
        if count != 1:
            raise SystemExit(
                f"mutation {mutation.name}: expected the pattern once in dpmem_ref/{filename}, found {count}: {old!r}"
            )
        path.write_text(pattern.sub(new, text))


def run_suite(root: Path, paths: list[str], timeout: int, stop_first: bool = True) -> tuple[int, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env["DPMEM_MUTATION_RUN"] = "1"
    env.setdefault("HYPOTHESIS_PROFILE", "ci")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    where = subprocess.run(
        [sys.executable, "-c", "import dpmem_ref, sys; sys.stdout.write(dpmem_ref.__file__)"],
        cwd=root, env=env, capture_output=True, text=True, check=True,
    ).stdout
    if not Path(where).resolve().is_relative_to(root.resolve()):
        raise SystemExit(f"dpmem_ref imported from {where}, not from the copy {root}")
    command = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", "--no-header", "-rfE"]
    if stop_first:
        command.insert(4, "-x")
    try:
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timeout"
    return done.returncode, done.stdout + done.stderr


def failing_tests(output: str) -> tuple[str, ...]:
    found = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, flags=re.MULTILINE)
    return tuple(dict.fromkeys(re.sub(r"\[.*\]$", "", name) for name in found))


def first_failures(output: str) -> str:
    found = list(failing_tests(output))
    return ", ".join(found[:3]) if found else output.strip().splitlines()[-1] if output.strip() else "no output"


def check(mutation: Mutation | None, paths: list[str], timeout: int, stop_first: bool = True) -> Outcome:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dpmem-mutant-") as tmp:
        root = Path(tmp)
        make_copy(root)
        if mutation is not None:
            apply(mutation, root)
        code, output = run_suite(root, paths, timeout, stop_first)
    name = mutation.name if mutation else "baseline (unmutated)"
    detail = first_failures(output) if code != 0 else "suite passed"
    return Outcome(name, code != 0, time.perf_counter() - start, detail, failing_tests(output))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these mutations")
    parser.add_argument("--with-tests", action="store_true", help="also run tests/ (the kernel unit tests)")
    parser.add_argument(
        "--paths", nargs="*", default=None,
        help="run these test paths instead (e.g. the tests a mutant's description names)",
    )
    parser.add_argument("--timeout", type=int, default=900, help="seconds per suite run")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument(
        "--matrix", action="store_true",
        help="run each mutant's whole suite (no -x) and print which tests kill which mutants",
    )
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:32s} {m.description}")
        return 0
    selected = [m for m in MUTATIONS if args.only is None or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutations {sorted(unknown)}; see --list")
    paths = args.paths or ["proofs_as_tests"] + (["tests"] if args.with_tests else [])

    baseline = check(None, paths, args.timeout)
    print(f"baseline: {'FAILED' if baseline.killed else 'passed'} in {baseline.seconds:.0f}s ({baseline.detail})", flush=True)
    if baseline.killed:
        print("the unmutated suite fails: fix it before judging mutants")
        return 2
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [(m, pool.submit(check, m, paths, args.timeout, not args.matrix)) for m in selected]
        outcomes = []
        for mutation, future in futures:
            outcome = future.result()
            outcomes.append(outcome)
            status = "killed  " if outcome.killed else "SURVIVED"
            print(f"{status} {mutation.name:30s} {outcome.seconds:6.0f}s  {outcome.detail}", flush=True)
    if args.matrix:
        print("\nkills per test:")
        tests = sorted({t for o in outcomes for t in o.failing})
        for test in tests:
            victims = [o.name for o in outcomes if test in o.failing]
            print(f"  {test}: {len(victims)}  ({', '.join(victims)})")
    killed = sum(o.killed for o in outcomes)
    print(f"\nkill count: {killed}/{len(outcomes)} mutants killed")
    return 0 if killed == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
