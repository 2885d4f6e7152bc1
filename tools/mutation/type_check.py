#!/usr/bin/env python3
"""mutmut's type-check pre-filter ([tool.mutmut] type_check_command): `mypy --strict` over the
mutated copy, keeping only the errors a mutation made.

CI runs `mypy --strict dpmem_ref` and fails on any error, so a mutant that mypy rejects can never
be merged: mutmut counts it as caught (exit 37, killed) without running its tests. mutmut runs
this command inside `mutants/` and maps each error line to the mutant function around it; an error
outside every mutant stops the run. Its trampolines add errors that no mutation made, which this
removes so that no mutant is counted as caught for them:

- `unused-ignore`: mutmut writes `# type: ignore` on its trampoline lines, mostly unused;
- an error outside every mutant function (an attrs converter that names a function mutmut has
  replaced by its trampoline);
- every error in a function whose unmutated copy (`..__mutmut_orig`) has an error too: that error
  is the trampoline's (a method copied beside its class body), so none of the function's mutants
  is counted as caught by the type checker and each is tested.

What remains is printed in mypy's JSON-lines format, which mutmut reads (it picks its parser by
the word `mypy` in the command, hence the last argument in pyproject.toml).
"""

from __future__ import annotations

import ast
import collections
import json
import subprocess
import sys
from pathlib import Path

from mutmut.mutation.file_mutation import is_mutated_method_name

ORIGINAL = "__mutmut_orig"


def mutant_spans(source: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every mutant function, decorators included: the lines
    mutmut's MutatedMethodsCollector gives (libcst there, the standard parser here: the files are
    large and libcst's position metadata took minutes over them)."""
    spans: list[tuple[str, int, int]] = []
    pending: list[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and is_mutated_method_name(child.name):
                first = min([child.lineno, *(decorator.lineno for decorator in child.decorator_list)])
                spans.append((child.name, first, child.end_lineno or child.lineno))
            elif not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):  # mutants are never nested in functions
                pending.append(child)
    return spans


def trampoline_free_errors(errors: list[dict[str, object]]) -> list[dict[str, object]]:
    by_file: dict[str, list[dict[str, object]]] = collections.defaultdict(list)
    for error in errors:
        if error.get("severity") == "error" and error.get("code") != "unused-ignore":
            by_file[str(error["file"])].append(error)
    kept: list[dict[str, object]] = []
    for file, file_errors in by_file.items():
        spans = mutant_spans(Path(file).read_text(encoding="utf-8"))
        placed = []
        for error in file_errors:
            line = int(str(error["line"]))
            name = next((name for name, first, last in spans if first <= line <= last), None)
            if name is not None:
                placed.append((name, error))
        broken_originals = {name.removesuffix(ORIGINAL) for name, _ in placed if name.endswith(ORIGINAL)}
        for name, error in placed:
            base = name.rpartition("__mutmut_")[0]
            if base not in broken_originals:
                kept.append(error)
    return kept


def main() -> int:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--output", "json", "--no-warn-unused-ignores", "dpmem_ref"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (a crash or a usage error), no verdict
        sys.stderr.write(done.stderr)
        return done.returncode
    errors = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    for error in trampoline_free_errors(errors):
        print(json.dumps(error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
