"""The mutation run's type-check pre-filter (tools/mutation/type_check.py) counts a mutant as
caught only for an error its mutation made: errors mutmut's trampolines make (unused ignores, an
error outside every mutant, an error its unmutated copy shares) never count."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutation_tools import load_tool

pytest.importorskip("mutmut")

ROOT = Path(__file__).resolve().parents[2]
type_check = load_tool("type_check")

MUTATED = """\
import attrs


def plain(x):  # type: ignore
    return x


def x_size__mutmut_orig(items: list[int]) -> int:
    return len(items)


def x_size__mutmut_1(items: list[int]) -> int:
    return len(None)


class Vector:
    def xǁVectorǁ__eq____mutmut_orig(self, other: object) -> bool:
        return self.v == other.v


    @staticmethod
    def xǁVectorǁ__eq____mutmut_1(self, other: object) -> bool:
        return self.v != other.v
"""


def _error(line: int, code: str = "arg-type") -> dict[str, object]:
    return {"file": "m.py", "line": line, "code": code, "severity": "error", "message": "..."}


def test_only_errors_a_mutation_made_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.py").write_text(MUTATED)
    monkeypatch.chdir(tmp_path)
    lines = MUTATED.splitlines()
    at = {text.strip(): number for number, text in enumerate(lines, start=1)}
    mutant_error = _error(at["return len(None)"])
    errors = [
        _error(at["def plain(x):  # type: ignore"], "unused-ignore"),
        _error(at["return x"]),  # outside every mutant function
        mutant_error,
        _error(at["return self.v == other.v"], "no-any-return"),  # the unmutated copy's: a trampoline's
        _error(at["return self.v != other.v"], "no-any-return"),
        _error(at["@staticmethod"], "misc"),  # a decorator line belongs to its mutant, but the copy is broken
        {**_error(at["return len(None)"]), "severity": "note"},
    ]
    assert type_check.trampoline_free_errors(errors) == [mutant_error]


def test_mutant_spans_cover_decorators_and_methods_in_class_bodies() -> None:
    spans = {name: (first, last) for name, first, last in type_check.mutant_spans(MUTATED)}
    lines = MUTATED.splitlines()
    assert set(spans) == {
        "x_size__mutmut_orig",
        "x_size__mutmut_1",
        "xǁVectorǁ__eq____mutmut_orig",
        "xǁVectorǁ__eq____mutmut_1",
    }
    first, last = spans["xǁVectorǁ__eq____mutmut_1"]
    assert lines[first - 1].strip() == "@staticmethod" and lines[last - 1].strip() == "return self.v != other.v"
