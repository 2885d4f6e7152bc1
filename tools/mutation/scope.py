#!/usr/bin/env python3
"""Widen [tool.mutmut] in this checkout's pyproject.toml to the round-4 scope (`scope.py round4`).

The committed configuration mutates the kernel (its report, REPORT.md, is complete). The round-4
scope (ledger/, runtime/, serve/, audit/: tools/mutation/round4-modules.txt) runs in a worktree
of its own until its run is complete: `git worktree add ../dpmem-mutation main`, then in it
`python tools/mutation/scope.py round4` and `make mutation`. The verdicts it saves
(tools/mutation/results/) are committed from there like any change.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _entries(listing: str) -> list[str]:
    stripped = (line.strip() for line in listing.splitlines())
    return [entry for entry in stripped if entry and not entry.startswith("#")]


def listed_modules(listing: str) -> list[str]:
    """The modules of a listing such as round4-modules.txt: its entries ending .py (the `tests:`,
    `drop:` and `k:` entries and the comments are not modules)."""
    return [entry for entry in _entries(listing) if entry.endswith(".py") and ":" not in entry]


def widened(pyproject: str, listing: str) -> str:
    entries = _entries(listing)
    modules = listed_modules(listing)
    tests = [entry.split(":", 1)[1].strip() for entry in entries if entry.startswith("tests:")]
    dropped = {entry.split(":", 1)[1].strip() for entry in entries if entry.startswith("drop:")}

    def extend(text: str, key: str, add: list[str], drop: set[str]) -> str:
        block = re.search(rf"^{key} = \[\n(.*?)^\]", text, flags=re.S | re.M)
        if block is None:
            raise SystemExit(f"pyproject.toml: [tool.mutmut] {key} not found as a multi-line list")
        present = re.findall(r'^\s*"([^"]+)",', block.group(1), flags=re.M)
        kept = [
            line for line in block.group(1).splitlines(keepends=True) if not any(f'"{item}"' in line for item in drop)
        ]
        added = [f'    "{item}",\n' for item in add if item not in present]
        return text[: block.start(1)] + "".join(kept) + "".join(added) + text[block.end(1) :]

    text = extend(pyproject, "only_mutate", modules, set())
    text = extend(text, "pytest_add_cli_args_test_selection", tests, dropped)
    expressions = [entry.split(":", 1)[1].strip() for entry in entries if entry.startswith("k:")]
    if expressions:
        args = re.search(r'^pytest_add_cli_args = \[.*"-k", "([^"]*)"\]$', text, flags=re.M)
        if args is None:
            raise SystemExit("pyproject.toml: [tool.mutmut] pytest_add_cli_args has no -k expression to replace")
        text = text[: args.start(1)] + expressions[-1] + text[args.end(1) :]
    return text


def main() -> int:
    if sys.argv[1:] != ["round4"]:
        print("usage: scope.py round4", file=sys.stderr)
        return 2
    path = ROOT / "pyproject.toml"
    path.write_text(widened(path.read_text(), (ROOT / "tools" / "mutation" / "round4-modules.txt").read_text()))
    print("pyproject.toml: [tool.mutmut] widened to the round-4 scope")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
