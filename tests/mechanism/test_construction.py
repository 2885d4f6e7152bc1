"""Building Eq. (7) (dpmem_ref.mechanism.construction): C3's check of the EM inputs (eps,
the sensitivity bound, exact scores in [0, 1], one score per view), named by slot and score
position, at `validate_em_inputs` and through the planner; and the argmax selector's ties.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import ContractViolation, FunctionScorer, PublicPrefix, plan_slot
from dpmem_ref.mechanism.construction import argmax_view, em_exponents, exponential_mechanism, validate_em_inputs
from tests.kernel_fixtures import (
    interface_reading_1,
    make_store,
)


def test_argmax_breaks_ties_towards_the_first_view():
    views = ("v0", "v1", "v2")
    assert argmax_view(views, (Fraction(1, 2), Fraction(1), Fraction(1))).view == "v1"
    assert argmax_view(views, (Fraction(1), Fraction(1), Fraction(1))).view == "v0"
    assert argmax_view(views, (Fraction(0), Fraction(0), Fraction(1))).view == "v2"
    released = argmax_view(views, (Fraction(0), Fraction(0), Fraction(1)))
    assert released.views == views and released.support() == ("v2",)


class _FixedEpsilon:
    """A budget rule returning a fixed (possibly invalid) eps: C3 must catch it."""

    name = "fixed"

    def __init__(self, value) -> None:
        self.value = value

    def epsilon(self, charge_set, caps):
        return self.value


def _plan_with(scorer=None, budget=None):
    import attrs

    interface = interface_reading_1()
    if scorer is not None:
        interface = attrs.evolve(interface, scorer=scorer)
    if budget is not None:
        interface = attrs.evolve(interface, budget=budget)
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    return plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "g", make_store())


@pytest.mark.parametrize(
    ("scorer", "budget", "message"),
    [
        (None, _FixedEpsilon(Fraction(0)), "slot g: epsilon must be a positive exact rational, found 0"),
        (None, _FixedEpsilon(0.25), "slot g: epsilon must be a positive exact rational, found 0.25"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), Fraction(1)), Fraction(0)), None,
         "slot g: sensitivity bound must be positive, found 0"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), Fraction(1)), 0.5), None,
         "slot g: sensitivity bound must be positive, found 0.5"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), 1.0), Fraction(1)), None, "slot g: score #1 is not an exact rational"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), Fraction(3, 2)), Fraction(1)), None,
         "slot g: score #1 lies outside [0, 1]"),
        (FunctionScorer(lambda r, v, i: (Fraction(0),), Fraction(1)), None,
         "query q, slot g: scorer returned 1 scores for 2 views"),
    ],
)
def test_c3_refuses_invalid_em_inputs_by_name(scorer, budget, message):
    with pytest.raises(ContractViolation) as error:
        _plan_with(scorer, budget)
    assert error.value.condition == "C3"
    assert error.value.message == message


@pytest.mark.parametrize(
    ("epsilon", "sensitivity", "scores", "message"),
    [
        (Fraction(0), Fraction(1), [Fraction(1)], "slot g: epsilon must be a positive exact rational, found 0"),
        (1, Fraction(1), [Fraction(1)], "slot g: epsilon must be a positive exact rational, found 1"),
        (Fraction(1), Fraction(0), [Fraction(1)], "slot g: sensitivity bound must be positive, found 0"),
        (Fraction(1), 1, [Fraction(1)], "slot g: sensitivity bound must be positive, found 1"),
        (Fraction(1), Fraction(1), [Fraction(1), 1], "slot g: score #1 is not an exact rational"),
        (Fraction(1), Fraction(1), [Fraction(1), Fraction(2)], "slot g: score #1 lies outside [0, 1]"),
        (Fraction(1), Fraction(1), [Fraction(0), Fraction(-1)], "slot g: score #1 lies outside [0, 1]"),
    ],
)
def test_em_inputs_name_the_slot_and_the_score_position(epsilon, sensitivity, scores, message):
    with pytest.raises(ContractViolation) as error:
        validate_em_inputs("g", scores, epsilon, sensitivity)
    assert error.value.code == "C3" and error.value.message == message


def test_em_inputs_accept_scores_at_both_ends():
    assert validate_em_inputs("g", [Fraction(0), Fraction(1)], Fraction(1, 3), Fraction(1, 7)) is None


def test_em_exponents_are_eps_times_the_score_over_twice_the_sensitivity():
    """Eq. (7): x_v = eps * u_v / (2 Delta), exactly."""
    scores = (Fraction(0), Fraction(1, 3), Fraction(1))
    assert em_exponents(scores, Fraction(2, 3), Fraction(3, 5)) == (Fraction(0), Fraction(5, 27), Fraction(5, 9))
    assert em_exponents((), Fraction(1), Fraction(1)) == ()


def test_scores_without_a_small_common_denominator_take_the_fraction_route_with_the_same_exponents():
    """Scores whose denominators' lcm passes the integer route's bound (256 bits) are built
    from Fractions (`em_exponents`): the exponents are still eps * u_v / (2 Delta)."""
    primes = [2**127 - 1, 2**89 - 1, 2**107 - 1]  # Mersenne primes: lcm has 323 bits
    scores = tuple(Fraction(1, p) for p in primes) + (Fraction(1),)
    epsilon, sensitivity = Fraction(1, 2), Fraction(1, 1)
    weights = exponential_mechanism(("a", "b", "c", "d"), scores, epsilon, sensitivity)
    assert weights.exponents == tuple(epsilon * u / (2 * sensitivity) for u in scores)
    assert weights.exponents == em_exponents(scores, epsilon, sensitivity)
