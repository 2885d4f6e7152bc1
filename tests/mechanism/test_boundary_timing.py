"""The timing bound helpers (dpmem_ref.mechanism.timing) validate every input.

Before: an eps / (2 Delta) past ~745 made exp(-gap) underflow to 0 and `public_round_bound`
divide by zero; past 1e308 the float conversion overflowed; a huge int failure probability
overflowed float(); `ks_statistic` looped forever on a NaN latency. Now each is one-line
InputError, and within range the values are unchanged.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.timing import (
    MAX_PUBLIC_GAP,
    ks_statistic,
    public_round_bound,
    slowest_case_distributions,
    worst_case_distribution,
)

NOT_EXACT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.decimals(allow_nan=True),
    st.booleans(),
    st.text(max_size=4),
    st.none(),
    st.sampled_from([np.int64(1), np.float64(0.5)]),
)
NOT_PROBABILITY = st.one_of(
    st.floats().filter(lambda p: not 0 < p < 1),
    st.integers(),
    st.integers(1, 10**400).map(lambda n: Fraction(1, 10**400 + n)),  # rounds to 0.0
    st.integers(1, 10**300).map(lambda n: 1 - Fraction(1, 10**400 + n)),  # rounds to 1.0
    st.fractions(min_value=1),
    st.booleans(),
    st.decimals(allow_nan=True),
    st.text(max_size=4),
    st.none(),
)


def refused(call: object, field: str) -> str:
    with pytest.raises(InputError) as info:
        call()  # type: ignore[operator]
    message = str(info.value)
    assert message.startswith(field) and "\n" not in message and len(message) < 300, message
    return message


@given(
    epsilon=st.fractions(min_value=MAX_PUBLIC_GAP * 2 + Fraction(1, 10**6), max_denominator=10**6)
    | st.integers(1401, 10**400).map(Fraction),
    sensitivity=st.sampled_from([Fraction(1), Fraction(1, 2)]),
)
def test_a_gap_past_the_float_range_is_refused_not_divided_by_zero(epsilon: Fraction, sensitivity: Fraction) -> None:
    """eps / (2 Delta) > 700: no finite round bound (exp(-gap) underflows)."""
    if epsilon / (2 * sensitivity) <= MAX_PUBLIC_GAP:
        epsilon = 2 * sensitivity * MAX_PUBLIC_GAP + 1
    refused(lambda: public_round_bound(epsilon, sensitivity, 0.01), "epsilon")
    refused(lambda: worst_case_distribution(4, epsilon, sensitivity), "epsilon")
    refused(lambda: slowest_case_distributions(4, epsilon, sensitivity), "epsilon")


@given(value=NOT_EXACT | st.fractions(max_value=0) | st.integers(max_value=0))
def test_eps_and_sensitivity_are_positive_exact_rationals(value: object) -> None:
    refused(lambda: public_round_bound(value, Fraction(1), 0.01), "epsilon")  # type: ignore[arg-type]
    refused(lambda: public_round_bound(Fraction(1), value, 0.01), "sensitivity")  # type: ignore[arg-type]


@given(value=NOT_PROBABILITY)
def test_the_failure_probability_is_inside_zero_one_as_a_float(value: object) -> None:
    refused(lambda: public_round_bound(Fraction(1), Fraction(1), value), "failure_probability")  # type: ignore[arg-type]


@given(
    gap=st.fractions(min_value=Fraction(1, 10**6), max_value=MAX_PUBLIC_GAP, max_denominator=10**6),
    delta=st.floats(min_value=5e-324, max_value=0.999, exclude_min=False),
)
def test_within_range_the_round_bound_is_finite_and_sound(gap: Fraction, delta: float) -> None:
    """At the limit and below: an integer R >= 1 with (1 - exp(-gap))^R <= delta (up to
    float rounding), exactly the formula of the module doc."""
    rounds = public_round_bound(2 * gap, Fraction(1), delta)
    assert isinstance(rounds, int) and rounds >= 1
    acceptance = math.exp(-float(gap))
    if acceptance < 1.0 and rounds < 10**300:
        assert rounds * math.log1p(-acceptance) <= math.log(delta) * (1 - 1e-9)


@given(
    good=st.lists(st.integers(0, 10**6) | st.floats(0, 1e6), min_size=1, max_size=5),
    bad=st.sampled_from([math.nan, math.inf, -math.inf, None, "1", True, Decimal(1), [1]]),
    where=st.integers(0, 5),
)
def test_ks_statistic_refuses_non_finite_latencies(good: list[float], bad: object, where: int) -> None:
    sample = list(good)
    sample.insert(min(where, len(sample)), bad)  # type: ignore[arg-type]
    refused(lambda: ks_statistic(sample, good), "sample_a")
    refused(lambda: ks_statistic(good, sample), "sample_b")


@pytest.mark.parametrize("sample", [[], (), None, "12", {1: 2}])
def test_ks_statistic_refuses_empty_or_other_containers(sample: object) -> None:
    refused(lambda: ks_statistic(sample, [1]), "sample_a")  # type: ignore[arg-type]


def test_huge_integer_latencies_are_compared_exactly() -> None:
    assert ks_statistic([10**400], [1]) == 1.0 and ks_statistic([1, 2, 3], [1, 2, 3]) == 0
