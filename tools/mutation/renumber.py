#!/usr/bin/env python3
"""Keep the equivalence judgements on the mutants they were written for when judged code changes.

A judgement names a mutant by its number within its function (`x_f__mutmut_7`), and mutmut numbers
a function's mutants in the order it generates them. A change to a judged function (a literal that
becomes a named constant, a new argument) can add or remove mutants before a judged one: its number
then names another mutant, and the judgement would explain a mutant nobody looked at.

`renumber.py REV` compares every source file of dpmem_ref/ changed between commit REV and the working
tree: both versions' mutants come from mutmut's own generator (`create_mutations`), each keyed by its
function, the code of the node it replaces, the code it puts there, and which occurrence of that pair
it is. A judged mutant whose key still exists under another number is MOVED, one whose key is gone is
GONE (its mutation no longer exists: judge the new mutants again). `--write` renames the MOVED ones
in tools/mutation/equivalents*.toml and drops the GONE ones; exit 1 when anything moved or went
(without --write) so that a check can stop on it. Run it before committing a change to judged code:
`python tools/mutation/renumber.py HEAD`.

`--same 'OLD=>NEW'` (repeatable): a textual change made on purpose that the key should not see
(`'connect_timeout=10=>connect_timeout=CONNECT_TIMEOUT_S'`): the old mutant's code is read with
it applied, so a mutation of that call is still the same mutation.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JUDGEMENTS = ("equivalents.toml", "equivalents-round4.toml")
Key = tuple[str, str, str, int]


def mutant_keys(filename: str, code: str, same: tuple[tuple[str, str], ...] = ()) -> dict[tuple[str, int], Key]:
    """(mangled function name as in mutant names, mutmut's number) -> (the same function, the code
    of the node replaced, the code put there, which occurrence of that pair in the function).

    mutmut numbers the mutants of each top-level function and each method of a top-level class
    in the order `create_mutations` lists them (`combine_mutations_to_source`)."""
    import libcst as cst
    from mutmut.mutation.file_mutation import create_mutations

    module, mutations, _, _ = create_mutations(filename, code)
    mangled: dict[int, str] = {}
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            mangled[id(statement)] = f"x_{statement.name.value}"
        elif isinstance(statement, cst.ClassDef) and isinstance(statement.body, cst.IndentedBlock):
            for method in statement.body.body:
                if isinstance(method, cst.FunctionDef):
                    mangled[id(method)] = f"xǁ{statement.name.value}ǁ{method.name.value}"
    numbers: Counter[str] = Counter()
    occurrences: Counter[tuple[str, str, str]] = Counter()
    keys: dict[tuple[str, int], Key] = {}
    for mutation in mutations:
        function = mangled.get(id(mutation.contained_by_top_level_function))
        if function is None:
            continue
        numbers[function] += 1
        original, mutated = module.code_for_node(mutation.original_node), module.code_for_node(mutation.mutated_node)
        for old, new in same:
            original, mutated = original.replace(old, new), mutated.replace(old, new)
        occurrences[(function, original, mutated)] += 1
        keys[(function, numbers[function])] = (function, original, mutated, occurrences[(function, original, mutated)])
    return keys


_NAME = re.compile(r"^(?P<module>dpmem_ref\.[\w.]+?)\.(?P<function>x_\w+|xǁ\w+ǁ\w+)__mutmut_(?P<number>\d+)$")


def renumbered(
    judged: list[str], module: str, old: dict[tuple[str, int], Key], new: dict[tuple[str, int], Key]
) -> dict[str, str | None]:
    """Judged names of `module` whose mutant moved (-> its new name) or went (-> None)."""
    number_of = {key: number for (_, number), key in new.items()}
    changes: dict[str, str | None] = {}
    for name in judged:
        found = _NAME.match(name)
        if found is None or found["module"] != module:
            continue
        key = old.get((found["function"], int(found["number"])))
        if key is None:
            continue  # not a mutant of the old code: nothing to carry
        if key not in number_of:
            changes[name] = None
        elif number_of[key] != int(found["number"]):
            changes[name] = f"{module}.{found['function']}__mutmut_{number_of[key]}"
    return changes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the commit the judgements were written against (e.g. HEAD)")
    parser.add_argument("--write", action="store_true", help="rename moved judgements, drop gone ones")
    parser.add_argument("--same", action="append", default=[], metavar="OLD=>NEW")
    args = parser.parse_args()
    same = tuple((pair.split("=>", 1)[0], pair.split("=>", 1)[1]) for pair in args.same)
    changed = subprocess.run(
        ["git", "diff", "--name-only", args.rev, "--", "dpmem_ref"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = {name: (ROOT / "tools" / "mutation" / name) for name in JUDGEMENTS}
    texts = {name: path.read_text() for name, path in files.items()}
    judged = [m["name"] for text in texts.values() for m in re.finditer(r'^"(?P<name>[^"]+)" =', text, re.M)]
    changes: dict[str, str | None] = {}
    for path in sorted(p for p in changed if p.endswith(".py") and (ROOT / p).exists()):
        shown = subprocess.run(["git", "show", f"{args.rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode != 0:
            continue  # a new file: no judgement names its mutants yet
        module = path.removesuffix(".py").replace("/", ".")
        old = mutant_keys(path, shown.stdout, same)
        new = mutant_keys(path, (ROOT / path).read_text())
        changes.update(renumbered(judged, module, old, new))
    for name, target in sorted(changes.items()):
        print(f"{'MOVED' if target else 'GONE'} {name}" + (f" -> {target}" if target else ""))
    if args.write and changes:
        for name, judgement_file in files.items():
            lines = []
            for line in texts[name].splitlines(keepends=True):
                found = re.match(r'^"([^"]+)" =', line)
                if found and found[1] in changes:
                    target = changes[found[1]]
                    if target is None:
                        continue
                    line = line.replace(f'"{found[1]}"', f'"{target}"', 1)
                lines.append(line)
            judgement_file.write_text("".join(lines))
    return 1 if changes and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
