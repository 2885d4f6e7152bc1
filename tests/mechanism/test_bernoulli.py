"""The exact Bernoulli samplers and proposal rounds (dpmem_ref.mechanism.bernoulli), on
scripted draws: Bernoulli(p) for a rational p, Bernoulli(exp(-gamma)) (Canonne, Kamath,
Steinke 2020, Algorithm 1) and one round of the bucketed proposal. Their frequencies over
seeded draws: tests/mechanism/test_em.py.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import InputError, TapeSource
from dpmem_ref.mechanism.bernoulli import bucket_proposal, bucketed_round
from dpmem_ref.mechanism.randomness import TapeExhausted
from tests.kernel_fixtures import (
    ScriptedSource,
)


def test_bernoulli_rational_draws_below_the_denominator():
    from dpmem_ref.mechanism.bernoulli import bernoulli_rational

    source = ScriptedSource(1, 2)
    assert bernoulli_rational(Fraction(2, 3), source) is True  # 1 < 2
    assert bernoulli_rational(Fraction(2, 3), source) is False  # 2 < 2 fails
    assert source.bounds == [3, 3]


@pytest.mark.parametrize(
    ("gamma", "tape", "bounds", "result"),
    [
        # gamma = 1/2: A_k ~ Bernoulli(gamma / k) = [randbelow(2k) < 1] until the first failure at K;
        # the result is [K odd] (Canonne, Kamath, Steinke 2020, Algorithm 1).
        (Fraction(1, 2), [1], [2], True),
        (Fraction(1, 2), [0, 1], [2, 4], False),
        (Fraction(1, 2), [0, 0, 3], [2, 4, 6], True),
        (Fraction(1, 2), [0, 0, 0, 7], [2, 4, 6, 8], False),
        (Fraction(2, 3), [2], [3], True),  # 2 < 2 fails: the comparison is strict
        (Fraction(2, 3), [1, 2], [3, 6], False),
        # gamma = 3/2 = 1 + 1/2: one exp(-1) factor (randbelow(k) < 1), then exp(-1/2).
        (Fraction(3, 2), [0, 1], [1, 2], False),
        (Fraction(3, 2), [0, 0, 2, 1], [1, 2, 3, 2], True),
        (Fraction(0), [], [], True),
    ],
)
def test_bernoulli_exp_minus_follows_the_algorithm_on_scripted_draws(gamma, tape, bounds, result):
    from dpmem_ref import bernoulli_exp_minus

    source = ScriptedSource(*tape)
    assert bernoulli_exp_minus(gamma, source) is result
    assert source.bounds == bounds and source.values == []


def test_bernoulli_exp_minus_names_a_negative_gamma():
    from dpmem_ref import bernoulli_exp_minus

    with pytest.raises(InputError) as error:
        bernoulli_exp_minus(Fraction(-1, 2), ScriptedSource())
    assert str(error.value) == "gamma: expected a non-negative rational, found Fraction(-1, 2)"


@pytest.mark.parametrize(("gamma", "found"), [(0.5, "'float'"), ("1/2", "'str'"), (True, "'bool'"), (None, "'NoneType'")])
def test_bernoulli_exp_minus_takes_only_an_exact_rational(gamma, found):
    """A float gamma would make exp(-gamma) inexact; a bool is an int Python-wise but not a
    rational anyone meant. Refused before any draw, naming the type, never the value."""
    from dpmem_ref import bernoulli_exp_minus

    source = ScriptedSource()
    with pytest.raises(InputError) as error:
        bernoulli_exp_minus(gamma, source)
    assert str(error.value) == f"gamma: expected a non-negative exact rational (Fraction or int), found {found}"
    assert source.bounds == []
    assert bernoulli_exp_minus(0, ScriptedSource()) is True  # exp(0) = 1: an int gamma, no draw


def test_bucketed_round_draws_a_member_only_in_a_shared_bucket():
    # gaps 0 and 3: buckets floor(4 gap) = 0 and 12, one view each. Slot 0 of the table is
    # bucket 0; its only view is taken without a draw; Bernoulli(exp(-0)) draws once.
    lone = (Fraction(0), Fraction(3))
    source = TapeSource([0, 0])
    assert bucketed_round(bucket_proposal(lone), lone, source) == 0 and source.consumed == 2
    # gaps 0, 0, 3: views 0 and 1 share bucket 0, a uniform draw below 2 picks one.
    shared = (Fraction(0), Fraction(0), Fraction(3))
    for pick in (0, 1):
        source = TapeSource([0, pick, 0])
        assert bucketed_round(bucket_proposal(shared), shared, source) == pick and source.consumed == 3
    with pytest.raises(TapeExhausted):
        bucketed_round(bucket_proposal(shared), shared, TapeSource([0, 1]))
