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
    .venv/bin/python scripts/mutation_check.py [--jobs 2] [--only NAME ...] [--with-tests] [--matrix] [--list]

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

ROOT = Path(__file__).resolve().parent.parent
COPY = ["dpmem_ref", "counterexamples", "proofs_as_tests", "tests", "examples", "conftest.py", "pyproject.toml"]
IGNORE = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc", ".pytest_cache")


@dataclass(frozen=True)
class Mutation:
    name: str
    description: str
    patches: tuple[tuple[str, str, str], ...]  # (file under dpmem_ref/, regex, replacement)


# Patterns are regular expressions (re.MULTILINE) so that reformatting the kernel does not
# silently disarm a mutant: each must match exactly once, or the script stops.
# The kernel decides admission on exact integer ledgers when the cap rule declares itself
# `prospective` (dpmem_ref/turn/plan.py); ProspectiveCap.admits is the same test on
# Fractions (held to it by tests/test_kernel_parts_contract.py). Cap mutants patch both.
CAP = r"return all\(ledgers\[a\] \+ epsilon <= caps\[a\] for a in charge_set\)"
CAP_UNITS = r"if units\[i\] \+ step > caps\[i\]:"
C5_ASSERTION = r"if strict and after\[i\] > caps\[i\]:"
CHARGE = r"for i in indices:\n(\s*)after\[i\] \+= step"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "drop-cap-check",
        "the prospective cap admits every selection (no L_a + eps <= B_a test)",
        (("parts/caps.py", CAP, "return True"), ("turn/plan.py", CAP_UNITS, "if False:")),
    ),
    Mutation(
        "drop-cap-check-and-assertion",
        "no prospective check and no post-update C5 assertion",
        (
            ("parts/caps.py", CAP, "return True"),
            ("turn/plan.py", CAP_UNITS, "if False:"),
            ("turn/plan.py", C5_ASSERTION, "if False:"),
        ),
    ),
    Mutation(
        "charge-one-attribute-gamma",
        "Gamma*(R) keeps only one of the touched attributes (incomplete charge set, C2)",
        (
            (
                "policy.py",
                r"frozenset\(a\.name for a in self\.attributes if a\.group & reads\)",
                "frozenset(sorted(a.name for a in self.attributes if a.group & reads)[-1:])",
            ),
        ),
    ),
    Mutation(
        "charge-one-attribute-ledger",
        "the ledger update charges only one attribute of the charge set",
        (("turn/plan.py", CHARGE, r"for i in indices[:1]:\n\1after[i] += step"),),
    ),
    Mutation(
        "argmax-instead-of-em",
        "the admitted selection is the highest-score view (C3)",
        (
            (
                "parts/selectors.py",
                r"return exponential_mechanism\(views, scores, epsilon, sensitivity\)",
                "return argmax_view(views, scores)",
            ),
            ("parts/selectors.py", r"^from dpmem_ref\.mechanism import ", "from dpmem_ref.mechanism import argmax_view, "),
        ),
    ),
    Mutation(
        "cap-retrospective",
        "the cap is checked as L_a < B_a instead of L_a + eps <= B_a",
        (
            ("parts/caps.py", CAP, "return all(ledgers[a] < caps[a] for a in charge_set)"),
            ("turn/plan.py", CAP_UNITS, "if units[i] >= caps[i]:"),
        ),
    ),
    Mutation(
        "cap-strict",
        "a strict L_a + eps < B_a refuses the last admissible charge",
        (
            ("parts/caps.py", CAP, "return all(ledgers[a] + epsilon < caps[a] for a in charge_set)"),
            ("turn/plan.py", CAP_UNITS, "if units[i] + step >= caps[i]:"),
        ),
    ),
    Mutation(
        "eps-over-delta",
        "EM exponents eps * u / Delta instead of eps * u / (2 Delta)",
        (("mechanism.py", r"\(2 \* sensitivity\)", "sensitivity"),),
    ),
    Mutation(
        "charge-after-sampling",
        "the plan carries no charge; the cursor adds it only when the drawn view is released",
        (
            ("turn/plan.py", r"units_after: Units = tuple\(after\)", "units_after = units"),
            (
                "turn/planner.py",
                r"units, scale = plan\.units_after, plan\.scale",
                "units, scale = tuple(u + (plan.epsilon * plan.scale).numerator"
                " if plan.admitted and n in plan.charge_set else u"
                " for n, u in zip(self.interface.policy.attribute_names, plan.units_after, strict=True)), plan.scale",
            ),
        ),
    ),
    Mutation(
        "fallback-depends-on-scores",
        "an admitted selection falls back when its best internal score is below 1/2 (C4/C5)",
        (
            (
                "turn/plan.py",
                r"if hooks\.fallback is not None and hooks\.fallback\(scores\):",
                "if max(scores) < Fraction(1, 2):",
            ),
        ),
    ),
    Mutation(
        "ledger-in-floats",
        "ledger values in binary floating point (units / scale as a float)",
        (("core/ledgers.py", r"found = Fraction\(count, self\.scale\)", "found = Fraction(count / self.scale)"),),
    ),
    Mutation(
        "scorer-reads-whole-slot",
        "the scorer reads every position of the slot, not just the read set (Lemma 1)",
        (
            (
                "turn/plan.py",
                r"entry = \(store, charges\.items\(store\), \{\}\)",
                "entry = (store, store.read(interface.policy.layout.positions_of(read.slot)), {})",
            ),
        ),
    ),
    Mutation(
        "sampler-parity-flip",
        "Bernoulli(exp(-gamma)) accepts on even K (the exact sampler draws the wrong law)",
        (("mechanism.py", r"return k % 2 == 1", "return k % 2 == 0"),),
    ),
    # One mutant per consumer of the turn planner: each loop that drives the cursor.
    Mutation(
        "cursor-release-before-charge",
        "the turn planner releases a view without moving the ledgers to the plan's charged values",
        (("turn/planner.py", r"units, scale = plan\.units_after, plan\.scale", "units, scale = self.units, self.scale"),),
    ),
    Mutation(
        "cursor-finish-drops-history",
        "the turn planner's finish does not append the turn to the history routing and controls read",
        (("turn/planner.py", r"frame\.history \+ \(record,\)\)", "frame.history)"),),
    ),
    Mutation(
        "durable-ignores-committed-ledgers",
        "the durable session releases on the plan's ledgers, not the ledgers its store committed",
        (("durable.py", r"cursor = cursor\.release\(release\.view, ledgers=committed\)", "cursor = cursor.release(release.view)"),),
    ),
)


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
    paths = ["proofs_as_tests"] + (["tests"] if args.with_tests else [])

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
