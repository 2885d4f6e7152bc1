"""Budget rules (dpmem_ref.parts.budget): OnlineBudget's eps = min_a B_a / K and
PreallocatedBudget's public plan, each bad input named whole (and the EM's own input check
next to them).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import (
    InputError,
    OnlineBudget,
    PreallocatedBudget,
)


def test_budget_rules_name_bad_input():
    caps = {"a": Fraction(1), "b": Fraction(2)}
    assert OnlineBudget(K=4).epsilon(frozenset({"a", "b"}), caps) == Fraction(1, 4)
    assert PreallocatedBudget.from_mapping({"a": 2, "b": 8}).epsilon(frozenset({"a", "b"}), caps) == Fraction(1, 4)
    for bad in (0, True, 1.5):
        with pytest.raises(InputError) as error:
            OnlineBudget(K=bad)
        assert error.value.field == "budget.K"
    with pytest.raises(InputError) as error:
        PreallocatedBudget.from_mapping({"a": 0})
    assert error.value.field == "budget.plan.a"
    with pytest.raises(InputError) as error:
        OnlineBudget(K=1).epsilon(frozenset(), caps)
    assert error.value.field == "charge set"
    with pytest.raises(InputError) as error:
        OnlineBudget(K=1).epsilon(frozenset({"zz"}), caps)
    assert error.value.field == "charge set" and error.value.found == ["zz"]
    with pytest.raises(InputError) as error:
        PreallocatedBudget.from_mapping({"a": 1}).epsilon(frozenset({"a", "b"}), caps)
    assert error.value.field == "budget.plan" and error.value.found == "none for ['b']"


def test_an_empty_charge_set_is_named():
    with pytest.raises(InputError) as error:
        OnlineBudget(K=1).epsilon(frozenset(), {"a": Fraction(1)})
    assert str(error.value) == "charge set: expected a non-empty set of attributes, found '{}'"


def test_preallocated_plan_counts_are_positive_integers():
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InputError) as error:
            PreallocatedBudget.from_mapping({"a": bad})
        assert str(error.value) == f"budget.plan.a: expected a positive integer count, found {bad!r}"


def test_budget_and_mechanism_inputs_are_named_whole():
    from dpmem_ref import ExponentialWeights

    with pytest.raises(InputError) as error:
        OnlineBudget(K=0)
    assert str(error.value) == "budget.K: expected a positive integer, found 0"
    with pytest.raises(InputError) as error:
        ExponentialWeights(views=("a", "b"), exponents=(Fraction(0),))
    assert str(error.value) == "exponential mechanism: expected one exponent per view, found 1"
    with pytest.raises(InputError):
        ExponentialWeights(views=(), exponents=())
