#!/usr/bin/env python3
"""mutmut's verdicts kept in the repository, so that `make mutation` is incremental across clones.

mutmut 3 caches its verdicts in `mutants/` (per mutated file, `<file>.meta`: an exit code per
mutant and a hash per function of the function's AST), which is ignored by git and lost with the
machine; a run over the round-4 scope takes longer than one machine lives. This keeps, per
mutated file, the verdicts and the function hashes under `tools/mutation/results/<file>.json`:

- `save` copies every verdict mutmut has reached (exit code not None, not 255: 255 is no verdict,
  see report.py) from `mutants/` into the store, with the hash of each function.
- `retest` (names on stdin) drops mutmut's cached verdict of each named mutant: the next run
  without names tests them with the rest (tools/mutation/run.sh: the unjudged survivors).
- `pending PATTERN...` lists the mutants matching the patterns that mutmut holds no verdict for
  (tools/mutation/run.sh's MUTATION_ONLY: naming a mutant to mutmut re-tests it, verdict or not).
- `restore` writes the store back as mutmut's `.meta` files where `mutants/` has none. mutmut then
  generates the mutants, compares each function's hash with the stored one, and keeps a verdict
  only where the function is unchanged (its own rule for its own cache, `create_mutants_for_file`);
  every other mutant is tested again.

The same trust as mutmut's cache: a verdict stays while the mutated function is unchanged, and a
surviving mutant not judged equivalent is re-tested first by tools/mutation/run.sh.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "tools" / "mutation" / "results"
MUTANTS = ROOT / "mutants"
NO_VERDICT = 255  # mutmut's worker raised instead of returning (report.py counts it as not checked)


def _metas(mutants: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """mutmut's cache files under `mutants` (one `<module>.meta` per mutated file) and their JSON."""
    for meta_path in sorted(mutants.glob("**/*.py.meta")) if mutants.is_dir() else []:
        yield meta_path, json.loads(meta_path.read_text())


def save(mutants: Path = MUTANTS, store: Path = STORE) -> int:
    """Copy mutmut's verdicts from `mutants` into `store`; the number of verdicts saved."""
    saved = 0
    for meta_path, meta in _metas(mutants):
        module = meta_path.relative_to(mutants).as_posix().removesuffix(".meta")
        verdicts = {
            name: code
            for name, code in sorted(meta["exit_code_by_key"].items())
            if code is not None and code != NO_VERDICT
        }
        target = store / (module + ".json")
        if not verdicts:
            # Every verdict of the module was reset (a changed function, a survivor sent back to
            # be re-tested): a stored file would restore what mutmut no longer holds.
            target.unlink(missing_ok=True)
            continue
        # Verdicts of functions mutmut no longer generates (or whose hash moved) drop out with
        # mutmut's own bookkeeping: the meta file holds only today's mutants and hashes.
        record = {
            "hash_by_function_name": dict(sorted(meta["hash_by_function_name"].items())),
            "exit_code_by_key": verdicts,
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(record, indent=1) + "\n")
        saved += len(verdicts)
    return saved


def restore(store: Path = STORE, mutants: Path = MUTANTS) -> int:
    """Write `store` back as mutmut's meta files where `mutants` has none; the verdicts written."""
    restored = 0
    for stored in sorted(store.glob("**/*.py.json")):
        module = stored.relative_to(store).as_posix().removesuffix(".json")
        meta_path = mutants / (module + ".meta")
        if meta_path.exists():  # mutmut's own cache is newer than (or the same as) the store
            continue
        record = json.loads(stored.read_text())
        meta = {
            "exit_code_by_key": record["exit_code_by_key"],
            "hash_by_function_name": record["hash_by_function_name"],
            "type_check_error_by_key": {},
            "durations_by_key": {},
            "estimated_durations_by_key": {},
        }
        meta_path.parent.mkdir(parents=True, exist_ok=True)
        meta_path.write_text(json.dumps(meta, indent=4))
        restored += len(record["exit_code_by_key"])
    return restored


def retest(names: set[str], mutants: Path = MUTANTS) -> int:
    """Drop mutmut's cached verdict of each named mutant, so that the next `mutmut run` without
    names tests it again with the others that have none (one run, one type check and one clean
    test pass, rather than a run naming them first); the number dropped."""
    dropped = 0
    for meta_path, meta in _metas(mutants):
        codes = meta["exit_code_by_key"]
        named = [name for name, code in codes.items() if name in names and code is not None]
        if named:
            codes.update(dict.fromkeys(named))
            meta_path.write_text(json.dumps(meta, indent=4))
            dropped += len(named)
    return dropped


def pending(patterns: list[str], mutants: Path = MUTANTS) -> list[str]:
    """The mutants matching any of `patterns` (mutmut's name globs) that have no verdict in mutmut's cache.

    `mutmut run NAME...` tests every mutant it is given, verdict or not: a pattern alone would
    re-test every killed mutant it matches. A function changed since mutmut last generated its
    mutants is not listed here (its cached verdicts stand until the next generation): the next
    run without names tests it, and the report counts it as not checked until then."""
    names: list[str] = []
    for _, meta in _metas(mutants):
        names += [
            name
            for name, code in meta["exit_code_by_key"].items()
            if code is None and any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
        ]
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "restore", "pending", "retest"))
    parser.add_argument("patterns", nargs="*", help="pending: mutant-name patterns (mutmut's globs)")
    args = parser.parse_args()
    if args.action == "pending":
        print("\n".join(pending(args.patterns)))
    elif args.action == "retest":
        names = set(sys.stdin.read().split())
        print(f"mutation results: {retest(names)} cached verdicts dropped, to be tested again")
    elif args.action == "save":
        print(f"mutation results: {save()} verdicts saved under {STORE.relative_to(ROOT)}/")
    else:
        print(
            f"mutation results: {restore()} stored verdicts restored into mutants/ (kept where the function is unchanged)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
