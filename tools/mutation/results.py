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
- `forget-changed-tests` drops from mutmut's stats (`mutants/mutmut-stats.json`) every test of a
  test file changed since the stats were collected (and of the files that import a changed helper
  module under tests/): mutmut maps a mutant to the tests that reached its function when their
  stats were taken and collects stats again only for tests whose *names* are new, so an edited
  test (a new assertion that calls another function, a fixture built per test instead of per
  module) would never run against the functions it now reaches. Forgotten, they are new tests to
  mutmut's next run, which collects their stats first. Prints how many were forgotten.
- `restore` writes the store back as mutmut's `.meta` files where `mutants/` has none. mutmut then
  generates the mutants, compares each function's hash with the stored one, and keeps a verdict
  only where the function is unchanged (its own rule for its own cache, `create_mutants_for_file`);
  every other mutant is tested again. Where a `.meta` file exists, it fills the mutants it holds
  without a verdict from the store, by the same rule (the function's hash in the cache is the
  stored one); it never replaces a verdict mutmut holds. mutmut drops every verdict of its cache
  when `[tool.mutmut]` changes (a test folder added to the selection), and `save` mirrors the
  cache: without this, the next `save` would drop the stored verdicts of unchanged functions too.
  A selection that *removes* tests can unmake a kill: run that one with MUTATION_FRESH=1.

The same trust as mutmut's cache: a verdict stays while the mutated function is unchanged, and a
surviving mutant not judged equivalent is re-tested first by tools/mutation/run.sh.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
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


def _function_of(mutant: str) -> str:
    """The key of `mutant`'s function in hash_by_function_name ("x_f" of "pkg.mod.x_f__mutmut_3")."""
    return mutant.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[-1]


def _fill(meta: dict[str, Any], record: dict[str, Any]) -> int:
    """Give the mutants `meta` holds without a verdict their stored one where the function's hash
    is the stored hash; the number filled (a verdict mutmut holds is never replaced)."""
    codes, hashes = meta["exit_code_by_key"], meta["hash_by_function_name"]
    filled = 0
    for name, code in record["exit_code_by_key"].items():
        function = _function_of(name)
        if (
            name in codes
            and codes[name] is None
            and hashes.get(function) == record["hash_by_function_name"].get(function)
        ):
            codes[name] = code
            filled += 1
    return filled


def restore(store: Path = STORE, mutants: Path = MUTANTS) -> int:
    """Write `store` back as mutmut's meta files where `mutants` has none, and into the mutants
    without a verdict of those it has (`_fill`); the verdicts written."""
    restored = 0
    for stored in sorted(store.glob("**/*.py.json")):
        module = stored.relative_to(store).as_posix().removesuffix(".json")
        meta_path = mutants / (module + ".meta")
        record = json.loads(stored.read_text())
        if meta_path.exists():  # mutmut's own cache: only its mutants without a verdict are filled
            meta = json.loads(meta_path.read_text())
            filled = _fill(meta, record)
            if filled:
                meta_path.write_text(json.dumps(meta, indent=4))
            restored += filled
            continue
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


def _changed_test_files(since: str | None, root: Path) -> set[str] | None:
    """Paths (relative to `root`) of the files under tests/ that differ between commit `since` and
    the working tree, deleted ones included; None when `since` is not a commit git knows here."""
    if since is None:
        return None
    known = subprocess.run(["git", "cat-file", "-e", f"{since}^{{commit}}"], cwd=root, capture_output=True, check=False)
    if known.returncode != 0:
        return None
    listed = subprocess.run(
        ["git", "diff", "--name-only", since, "--", "tests"], cwd=root, capture_output=True, text=True, check=True
    )
    untracked = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "--", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(listed.stdout.split()) | set(untracked.stdout.split())


def _affected_test_files(changed: set[str], root: Path) -> set[str]:
    """The changed test files, and every test file that imports a changed helper module of tests/
    (`tests/ledger_fixtures.py` -> a file naming `ledger_fixtures`) or lies under a changed conftest."""
    affected = {path for path in changed if Path(path).name.startswith("test_")}
    helpers = [Path(path) for path in changed if not Path(path).name.startswith("test_") and path.endswith(".py")]
    for test_file in (root / "tests").rglob("test_*.py"):
        relative = test_file.relative_to(root).as_posix()
        text = None
        for helper in helpers:
            if helper.name == "conftest.py":
                if test_file.is_relative_to(root / helper.parent):
                    affected.add(relative)
                continue
            text = test_file.read_text(encoding="utf-8") if text is None else text
            if re.search(rf"\b{re.escape(helper.stem)}\b", text):
                affected.add(relative)
    return affected


def forget_changed_tests(mutants: Path = MUTANTS, root: Path = ROOT) -> int:
    """Drop from mutmut's stats the tests of the test files changed since the stats' commit (every
    test when that commit is unknown here), and move the stats' commit to HEAD; the number dropped.

    mutmut's next run finds them missing from its stats, takes them for new tests and collects
    their stats before any mutant runs (`collect_or_load_stats`)."""
    stats_path = mutants / "mutmut-stats.json"
    if not stats_path.exists():
        return 0
    stats = json.loads(stats_path.read_text())
    changed = _changed_test_files(stats.get("git_commit"), root)
    durations: dict[str, float] = stats["duration_by_test"]
    if changed is None:
        forgotten = set(durations)
    else:
        affected = _affected_test_files(changed, root)
        forgotten = {test for test in durations if test.split("::")[0] in affected}
    for test in forgotten:
        del durations[test]
    for function, tests in stats["tests_by_mangled_function_name"].items():
        stats["tests_by_mangled_function_name"][function] = [test for test in tests if test not in forgotten]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
    stats["git_commit"] = head.stdout.strip()
    stats_path.write_text(json.dumps(stats, indent=2))
    return len(forgotten)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "restore", "pending", "retest", "forget-changed-tests"))
    parser.add_argument("patterns", nargs="*", help="pending: mutant-name patterns (mutmut's globs)")
    args = parser.parse_args()
    if args.action == "pending":
        print("\n".join(pending(args.patterns)))
    elif args.action == "retest":
        names = set(sys.stdin.read().split())
        print(f"mutation results: {retest(names)} cached verdicts dropped, to be tested again")
    elif args.action == "forget-changed-tests":
        forgotten = forget_changed_tests()
        print(
            f"mutation stats: {forgotten} tests of changed test files forgotten (mutmut collects them again)",
            file=sys.stderr,
        )
        print(forgotten)
    elif args.action == "save":
        print(f"mutation results: {save()} verdicts saved under {STORE.relative_to(ROOT)}/")
    else:
        print(
            f"mutation results: {restore()} stored verdicts restored into mutants/ (kept where the function is unchanged)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
