"""The mutation report shows each survivor as the lines its mutation changed (`-`/`+`, as
`mutmut show` prints them), read from mutmut's copy where the mutant sits beside the
function's unmutated copy: a method's lines at a function's indentation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutation_tools import load_tool

ROOT = Path(__file__).resolve().parents[2]
report = load_tool("report")

MUTATED = """\
def x_size__mutmut_orig(items):
    total = 0
    return len(items) + total


def x_size__mutmut_1(items):
    total = 1
    return len(items) + total


class Keys:
    def xǁKeysǁload__mutmut_orig(self, path):
        if path:
            return open(path).read()


    def xǁKeysǁload__mutmut_2(self, path):
        if not path:
            return open(path).read()
"""


def test_a_survivors_diff_is_its_changed_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mutants" / "pkg").mkdir(parents=True)
    (tmp_path / "mutants" / "pkg" / "mod.py").write_text(MUTATED, encoding="utf-8")
    monkeypatch.setattr(report, "ROOT", tmp_path)
    monkeypatch.setattr(report, "_MUTATED_SOURCES", {})
    assert report._changed_lines("pkg.mod.x_size__mutmut_1") == ["-    total = 0", "+    total = 1"]
    assert report._changed_lines("pkg.mod.xǁKeysǁload__mutmut_2") == ["-    if path:", "+    if not path:"]
