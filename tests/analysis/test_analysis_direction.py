"""The one direction type (`dpmem_ref.analysis.direction`): its spellings, the pairs it
orders, and `Best`, the one record of the largest loss both ways."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from dpmem_ref.analysis import LossDirection, WorstCase
from dpmem_ref.analysis.direction import Best
from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, ZERO, Loss
from dpmem_ref.analysis.witness import Direction

A, B = LossDirection.A_OVER_B, LossDirection.B_OVER_A


def test_spellings() -> None:
    assert list(LossDirection) == [A, B]  # A over B first: the order of every output
    assert (A.value, B.value) == ("a_over_b", "b_over_a")
    assert A == "a_over_b" and B == "b_over_a" and str(B) == "b_over_a"
    assert json.dumps({"direction": B}) == '{"direction": "b_over_a"}'
    assert (A.side, B.side) == ("a", "b")
    for direction in LossDirection:
        assert LossDirection.of(direction) is direction
        assert LossDirection.of(direction.value) is direction
        assert LossDirection.of(direction.side) is direction
    with pytest.raises(ValueError):
        LossDirection.of("ab")


def test_pairs() -> None:
    assert (A.other, B.other) == (B, A)
    assert (A.pick("ab", "ba"), B.pick("ab", "ba")) == ("ab", "ba")
    assert (A.numerator("M", "M'"), A.denominator("M", "M'")) == ("M", "M'")
    assert (B.numerator("M", "M'"), B.denominator("M", "M'")) == ("M'", "M")


def test_best_combines_each_direction_first_on_ties() -> None:
    small, large = Loss.of_fractions(Fraction(1, 4), Fraction(1, 4)), Loss.of_fractions(Fraction(1, 2), Fraction(1, 2))
    first = Best(large, "x", small, "x")
    second = Best(large, "y", large, "y")
    both = first.combine(second)
    assert both.ab == large and both.ab_at == "x"  # a tie keeps the first
    assert both.ba == large and both.ba_at == "y"
    assert (both.loss(A), both.at(A), both.loss(B), both.at(B)) == (large, "x", large, "y")
    ab, ab_at, ba, ba_at = Best(IMPOSSIBLE, None, ZERO, None).combine(Best(INFINITE, "z", IMPOSSIBLE, "w"))
    assert (ab, ab_at, ba, ba_at) == (INFINITE, "z", ZERO, None)


def test_worst_case_direction_and_along() -> None:
    low, high = Direction(ZERO, ()), Direction(INFINITE, ())
    toward_b = WorstCase(a_over_b=low, b_over_a=high, horizon=1, states_explored=0, seconds=0.0)
    assert toward_b.direction is B and toward_b.direction == "b_over_a" and toward_b.worst is high
    assert toward_b.along(A) is low and toward_b.along(B) is high
    tie = WorstCase(a_over_b=low, b_over_a=Direction(ZERO, ()), horizon=1, states_explored=0, seconds=0.0)
    assert tie.direction is A and tie.worst is low
