"""Equivalence judgements follow their mutant when judged code changes (tools/mutation/renumber.py):
mutmut numbers a function's mutants in generation order, so a change before a judged mutant moves
its number; the tool finds each judged mutant again by what it changes, per function and per
method of each class."""

from __future__ import annotations

import pytest

from tests.mutation_tools import load_tool

pytest.importorskip("mutmut", reason="extra dev (mutmut) not installed")
renumber = load_tool("renumber")

OLD = """
def f(a):
    connect(a, timeout=10)
    return a + 1


class A:
    def g(self):
        return "a"


class B:
    def g(self):
        return "b"
"""
NEW = OLD.replace("timeout=10", "timeout=LIMIT")


def _number(keys: dict[tuple[str, int], tuple[str, str, str, int]], function: str, original: str, mutated: str) -> int:
    (number,) = [n for (name, n), key in keys.items() if name == function and key[1:3] == (original, mutated)]
    return number


def test_a_judged_mutant_after_a_removed_one_moves_and_the_removed_one_goes() -> None:
    same = (("timeout=10", "timeout=LIMIT"),)
    old, new = renumber.mutant_keys("m.py", OLD, same), renumber.mutant_keys("m.py", NEW)
    minus = _number(old, "x_f", "a + 1", "a - 1")
    eleven = _number(old, "x_f", "10", "11")
    assert eleven < minus  # the literal's mutant comes first; with a name there, it is gone
    unchanged = _number(old, "x_f", "connect(a, timeout=LIMIT)", "connect(None, timeout=LIMIT)")
    judged = [f"dpmem_ref.m.x_f__mutmut_{n}" for n in (minus, eleven, unchanged)] + ["dpmem_ref.other.x_f__mutmut_1"]
    assert renumber.renumbered(judged, "dpmem_ref.m", old, new) == {
        f"dpmem_ref.m.x_f__mutmut_{minus}": f"dpmem_ref.m.x_f__mutmut_{minus - 1}",
        f"dpmem_ref.m.x_f__mutmut_{eleven}": None,
    }
    # the methods of two classes are numbered apart, as mutmut names them
    assert old[("xǁAǁg", 1)][1:3] == ('"a"', '"XXaXX"') and old[("xǁBǁg", 1)][1:3] == ('"b"', '"XXbXX"')
    assert renumber.renumbered(["dpmem_ref.m.xǁBǁg__mutmut_1"], "dpmem_ref.m", old, new) == {}
