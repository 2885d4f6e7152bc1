#!/usr/bin/env python3
"""mutmut's verdicts kept in the repository, so that `make mutation` is incremental across clones.

mutmut 3 caches its verdicts in `mutants/` (per mutated file, `<file>.meta`: an exit code per
mutant and a hash per function of the function's AST), which is ignored by git and lost with the
machine; a run over the round-4 scope takes longer than one machine lives. This keeps, per
mutated file, the verdicts and the function hashes under `tools/mutation/results/<file>.json`:

- `save` copies every verdict mutmut has reached (exit code not None, not 255: 255 is no verdict,
  see report.py) from `mutants/` into the store, with the hash of each function.
- `restore` writes the store back as mutmut's `.meta` files where `mutants/` has none. mutmut then
  generates the mutants, compares each function's hash with the stored one, and keeps a verdict
  only where the function is unchanged (its own rule for its own cache, `create_mutants_for_file`);
  every other mutant is tested again.

The same trust as mutmut's cache: a verdict stays while the mutated function is unchanged, and a
surviving mutant not judged equivalent is re-tested first by tools/mutation/run.sh.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "tools" / "mutation" / "results"
MUTANTS = ROOT / "mutants"
NO_VERDICT = 255  # mutmut's worker raised instead of returning (report.py counts it as not checked)


def save(mutants: Path = MUTANTS, store: Path = STORE) -> int:
    """Copy mutmut's verdicts from `mutants` into `store`; the number of verdicts saved."""
    saved = 0
    for meta_path in sorted(mutants.glob("**/*.py.meta")) if mutants.is_dir() else []:
        module = meta_path.relative_to(mutants).as_posix().removesuffix(".meta")
        meta = json.loads(meta_path.read_text())
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("save", "restore"))
    args = parser.parse_args()
    if args.action == "save":
        print(f"mutation results: {save()} verdicts saved under {STORE.relative_to(ROOT)}/")
    else:
        print(
            f"mutation results: {restore()} stored verdicts restored into mutants/ (kept where the function is unchanged)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
