#!/usr/bin/env python3
"""tools/mutation/REPORT.md from a mutmut run (tools/mutation/run.sh, `make mutation`).

Reads the module list and test selection from pyproject.toml [tool.mutmut] (the one
place), mutmut's per-file results under mutants/, mutmut's own summary
(`mutmut export-cicd-stats`, quoted raw), and tools/mutation/equivalents.toml: the
surviving mutants judged equivalent, each with a one-line reason. Every survivor is
listed with its diff and either that reason or UNEXPLAINED.

Scores: raw = (killed + timeout) / (checked), the tool's formula over every mutant
that ran; adjusted = the same with the listed equivalent mutants removed from the
denominator (an equivalent mutant cannot be killed by any test). Exit 1 when the
adjusted score is below --floor (default 90) or a survivor is unexplained.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scope import listed_modules  # noqa: E402  (tools/mutation/scope.py: the round-4 listing's format)

EQUIVALENTS = ROOT / "tools" / "mutation" / "equivalents.toml"


def judgements() -> dict[str, str]:
    """The mutants judged equivalent (name -> one-line reason), none where the file is absent."""
    return dict(tomllib.loads(EQUIVALENTS.read_text()).get("equivalent", {})) if EQUIVALENTS.exists() else {}

# mutmut 3's exit-code meanings (mutmut.stats.status_by_exit_code), except 255, which mutmut books
# as a timeout: its worker's pytest run raised instead of returning a verdict (here: pytest did not
# find a test id it was given), so no test ran to a result and the mutant counts as not checked.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 35: "suspicious",
          36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "not checked", 37: "caught by type check",
          -11: "segfault", -9: "segfault", 2: "interrupted", None: "not checked"}


def mutmut(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    return done.stdout


COVERAGE_SECTION = "\n## Kernel branch coverage"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="tools/mutation/REPORT.md")
    parser.add_argument("--floor", type=float, default=90.0)
    parser.add_argument("--run-status", default="0", help="exit status of `mutmut run` (124: stopped by the time bound)")
    parser.add_argument("--note", default="", help="a paragraph printed under the run status (what this run covered)")
    parser.add_argument("--modules-from", type=Path, default=None,
                        help="report only the modules listed in this file (its lines ending .py, as "
                             "tools/mutation/round4-modules.txt), not all of only_mutate")
    parser.add_argument("--list-unjudged", action="store_true",
                        help="print the cached survivors not judged equivalent and the mutants without a verdict (exit 255), "
                             "one name a line, and write no report")
    args = parser.parse_args()

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    modules = config["only_mutate"]
    equivalents = judgements()
    if args.modules_from is not None:
        listed = listed_modules(args.modules_from.read_text())
        missing = sorted(set(listed) - set(modules))
        if missing:
            print(f"{args.modules_from}: not in [tool.mutmut] only_mutate: {', '.join(missing)}", file=sys.stderr)
            return 2
        modules = listed
        prefixes = tuple(module.removesuffix(".py").replace("/", ".") + "." for module in modules)
        equivalents = {name: reason for name, reason in equivalents.items() if name.startswith(prefixes)}
    postgres_deselected = "not postgres" in " ".join(config.get("pytest_add_cli_args", []))

    per_module: dict[str, collections.Counter[str]] = {}
    timeout_codes: collections.Counter[int] = collections.Counter()
    survivors: list[tuple[str, str]] = []
    no_verdict: list[str] = []  # exit 255: mutmut keeps it as a result, so only naming it re-runs it
    for module in modules:
        meta = ROOT / "mutants" / (module + ".meta")
        counts: collections.Counter[str] = collections.Counter()
        if meta.exists():
            for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
                status = STATUS.get(code, "suspicious")
                counts[status] += 1
                if status == "timeout" or code == 255:
                    timeout_codes[code] += 1
                if status in ("survived", "no tests", "suspicious"):
                    survivors.append((name, status))
                if code == 255:
                    no_verdict.append(name)
        per_module[module] = counts
    if args.list_unjudged:  # tools/mutation/run.sh re-tests these (and those without a verdict) first
        print("\n".join([name for name, _ in survivors if name not in equivalents] + no_verdict))
        return 0

    total = collections.Counter()
    for counts in per_module.values():
        total.update(counts)
    checked = sum(total.values()) - total["not checked"] - total["skipped"]
    killed = total["killed"] + total["timeout"] + total["caught by type check"]
    equivalent_here = [name for name, _ in survivors if name in equivalents]
    raw = 100.0 * killed / checked if checked else 0.0
    adjusted = 100.0 * killed / (checked - len(equivalent_here)) if checked > len(equivalent_here) else 0.0
    unexplained = [name for name, _ in survivors if name not in equivalents]
    # Entries that judge no current survivor (killed since, or renumbered): the file must
    # not keep reasons for mutants that are gone. Only decidable once every mutant ran.
    survivor_names = {name for name, _ in survivors}
    stale = sorted(set(equivalents) - survivor_names) if not total["not checked"] else []

    mutmut("export-cicd-stats")
    stats_path = ROOT / "mutants" / "mutmut-cicd-stats.json"
    raw_summary = stats_path.read_text().strip() if stats_path.exists() else "(mutmut export-cicd-stats wrote nothing)"

    lines = [
        "# Mutation testing report (mutmut)",
        "",
        "Generated by `tools/mutation/report.py` after `make mutation` (`tools/mutation/run.sh`). Tool: mutmut "
        f"{_version()}. Modules: "
        + (f"those listed in `{args.modules_from.as_posix()}`" if args.modules_from else "`[tool.mutmut] only_mutate` in pyproject.toml")
        + ". Tests: its "
        "`pytest_add_cli_args_test_selection` (the kernel's behaviour test folders; the ledger, runtime, serve, audit "
        "and CLI suites, "
        + ("without the PostgreSQL tests, which need a server per mutant" if postgres_deselected
           else "with the PostgreSQL tests, each mutant's run starting its own server")
        + "; the boundary suites and the proofs; ci Hypothesis profile with 4 examples per property, no shrinking); per mutant mutmut runs only the "
        "tests that reach the mutated function, in the pytest process or in a child process it starts "
        "(tools/mutation/subprocess_reach.py). Before any test, CI's `mypy --strict` over the mutated copy catches a "
        "mutant it rejects (tools/mutation/type_check.py: counted as killed, 'caught by type check'). A rerun without "
        "MUTATION_FRESH re-tests every cached survivor not judged equivalent against today's tests, in the same run as "
        "the mutants of functions changed since (mutmut's per-function hashes); the verdicts are kept in "
        "tools/mutation/results/ across machines.",
        "",
        "Survivors of earlier runs were killed by behaviour tests through public names, each beside the behaviour it pins "
        "(`tests/core/test_policy.py`, `tests/turn/test_plan.py`, `tests/mechanism/test_em_sampler.py`, ...); what still survives is listed below, "
        "each judged equivalent in `tools/mutation/equivalents.toml` (one-line reason) or marked UNEXPLAINED. "
        "A timeout counts as killed: SIGXCPU (-24, the mutant made a test loop past mutmut's CPU or wall limit: "
        f"{timeout_codes[-24] + timeout_codes[24] + timeout_codes[152]} here). mutmut gives the same label to exit 255, "
        "which is no verdict: its worker's pytest run raised instead of returning (a test id it was given that pytest "
        f"did not find); those count as not checked ({timeout_codes[255]} here) and are re-run.",
        "",
        f"`mutmut run` exit status: {args.run_status}" + (" (stopped by the time bound: partial)" if args.run_status == "124" else ""),
        "",
        *([args.note, ""] if args.note else []),
        "## Score",
        "",
        f"- mutants checked: {checked} (of {sum(total.values())} generated; {total['not checked']} not checked)",
        f"- killed (incl. timeouts and {total['caught by type check']} caught by type check): {killed}; "
        f"survived: {total['survived']}; no tests: {total['no tests']}; "
        f"suspicious: {total['suspicious']}",
        f"- raw score (killed / checked): **{raw:.1f}%**",
        f"- adjusted score (equivalent survivors removed): **{adjusted:.1f}%** ({len(equivalent_here)} equivalent)",
        f"- unexplained survivors: {len(unexplained)}",
        f"- equivalence entries that match no survivor (stale): {len(stale)}" + (f" ({', '.join(stale)})" if stale else ""),
        "",
        "| module | killed | type check | timeout | survived | no tests | suspicious | not checked |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for module, counts in per_module.items():
        lines.append(f"| {module} | {counts['killed']} | {counts['caught by type check']} | {counts['timeout']} | "
                     f"{counts['survived']} | "
                     f"{counts['no tests']} | {counts['suspicious']} | {counts['not checked']} |")
    lines += ["", "## mutmut's raw summary (`mutmut export-cicd-stats`)", "", "```json", raw_summary, "```", "",
              "## Surviving mutants", ""]
    if not survivors:
        lines.append("None.")
    for name, status in survivors:
        reason = equivalents.get(name)
        verdict = f"equivalent: {reason}" if reason else "UNEXPLAINED: needs a test"
        diff = _changed_lines(name)
        lines += [f"- `{name}` ({status}): {verdict}", "", "  ```diff", *("  " + row for row in diff), "  ```", ""]
    out = ROOT / args.out
    kept = ""  # the hand-written kernel branch-coverage section (issue 27) survives a regeneration
    if out.exists() and COVERAGE_SECTION in out.read_text():
        text = out.read_text()
        kept = text[text.index(COVERAGE_SECTION):]
    out.write_text("\n".join(lines).rstrip() + "\n" + kept)
    print(f"mutation score: raw {raw:.1f}%, adjusted {adjusted:.1f}% ({checked} checked, {killed} killed, "
          f"{len(equivalent_here)} equivalent, {len(unexplained)} unexplained, {len(stale)} stale) -> {args.out}")
    return 0 if adjusted >= args.floor and not unexplained and not stale else 1


_MUTATED_SOURCES: dict[str, dict[str, list[str]]] = {}


def _changed_lines(name: str) -> list[str]:
    """The mutant's changed lines, as `mutmut show` prints them (-/+), read from mutmut's copy
    (mutants/<module>.py holds each mutant beside the function's unmutated copy); a subprocess
    per survivor took minutes over hundreds of them. Falls back to `mutmut show`."""
    module, _, function = name.rpartition(".")
    path = ROOT / "mutants" / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / "mutants" / (module.replace(".", "/") + "/__init__.py")
    if path.exists():
        if str(path) not in _MUTATED_SOURCES:
            import ast

            source = path.read_text(encoding="utf-8")
            all_lines = source.splitlines()
            bodies: dict[str, list[str]] = {}
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
                    # after the def line, which names the copy; a method's body at a function's indentation
                    first_body_line = node.body[0].lineno if node.body else node.lineno + 1
                    body = all_lines[first_body_line - 1 : node.end_lineno]
                    bodies[node.name] = [line[node.col_offset :] for line in body]
            _MUTATED_SOURCES[str(path)] = bodies
        bodies = _MUTATED_SOURCES[str(path)]
        original = bodies.get(function.rpartition("__mutmut_")[0] + "__mutmut_orig")
        if function in bodies and original is not None:
            import difflib

            return _changes(difflib.unified_diff(original, bodies[function], lineterm="", n=0))
    return _changes(mutmut("show", name).splitlines())


def _changes(diff: Iterable[str]) -> list[str]:
    """A unified diff's removed and added lines, without its file headers."""
    return [row for row in diff if row[:1] in "+-" and row[:3] not in ("+++", "---")]


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mutmut")
    except Exception:  # noqa: BLE001 - a report without the version is still a report
        return "?"


if __name__ == "__main__":
    raise SystemExit(main())
