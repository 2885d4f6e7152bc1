"""Every semantic mutant of `tools/mutation/semantic_check.py` still applies to the kernel as it is.

Each patch of `tools/mutation/semantic_mutants.py` must match exactly once in its file (the script stops
otherwise), so a move or a refactor that disarms a mutant fails here, on every commit, and not
only when someone runs the slow mutation check."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "mutation"))
from semantic_mutants import MUTATIONS  # noqa: E402


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_every_patch_matches_exactly_once(mutation) -> None:  # type: ignore[no-untyped-def]
    for filename, pattern, _replacement in mutation.patches:
        source = ROOT / "dpmem_ref" / filename
        assert source.is_file(), f"{mutation.name}: dpmem_ref/{filename} does not exist (moved?)"
        found = len(re.compile(pattern, re.MULTILINE).findall(source.read_text(encoding="utf-8")))
        assert found == 1, f"{mutation.name}: pattern found {found} times in dpmem_ref/{filename}: {pattern!r}"


def test_mutant_names_are_unique() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))
