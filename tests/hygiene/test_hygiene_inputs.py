"""Kernel public entry points refuse malformed numbers and sizes with one-line errors.

One parametrized table (Hypothesis style): constructor or call, and the field (or
contract condition) its error must name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import pytest

from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.policy import MAX_ATTRIBUTES, MAX_POSITIONS, Attribute, Layout, Policy
from dpmem_ref.core.rational import positive_fraction, to_fraction, unit_interval_fraction
from dpmem_ref.core.views import MAX_VIEWS_PER_SLOT, View, Vocabulary
from dpmem_ref.mechanism.bernoulli import bernoulli_exp_minus
from dpmem_ref.mechanism.construction import validate_em_inputs
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.budget import OnlineBudget, PreallocatedBudget
from dpmem_ref.parts.scoring import LinearTagScorer, LinearWeights

NAN, INF = float("nan"), math.inf
ONE = Fraction(1)
LAYOUT = Layout(position_slots=("food",))

CASES: list[tuple[str, Callable[[], object], str]] = [
    ("cap nan", lambda: Attribute(name="a", group=frozenset({1}), cap=NAN), "attributes.a.cap"),  # type: ignore[arg-type]
    ("cap inf", lambda: Attribute(name="a", group=frozenset({1}), cap=INF), "attributes.a.cap"),  # type: ignore[arg-type]
    ("cap zero", lambda: Attribute(name="a", group=frozenset({1}), cap=Fraction(0)), "attributes.a.cap"),
    ("cap negative", lambda: Attribute(name="a", group=frozenset({1}), cap=Fraction(-2)), "attributes.a.cap"),
    ("K zero", lambda: OnlineBudget(K=0), "budget.K"),
    ("K nan", lambda: OnlineBudget(K=NAN), "budget.K"),  # type: ignore[arg-type]
    ("K bool", lambda: OnlineBudget(K=True), "budget.K"),
    ("plan zero", lambda: PreallocatedBudget(plan=(("a", 0),)), "budget.plan.a"),
    ("sensitivity nan", lambda: LinearTagScorer(declared_sensitivity=NAN), "scorer.sensitivity"),  # type: ignore[arg-type]
    ("sensitivity zero", lambda: LinearTagScorer(declared_sensitivity=Fraction(0)), "scorer.sensitivity"),
    ("sensitivity negative", lambda: LinearTagScorer(declared_sensitivity=Fraction(-1)), "scorer.sensitivity"),
    ("weight negative", lambda: LinearWeights(relevance=Fraction(-1)), "scorer.weights.r"),
    ("weights above 1", lambda: LinearWeights(relevance=ONE, compatibility=ONE), "scorer.weights"),
    ("weight inf", lambda: LinearWeights(specificity=INF), "scorer.weights.s"),  # type: ignore[arg-type]
    ("rational nan", lambda: to_fraction(NAN, "eps"), "eps"),
    ("rational inf", lambda: to_fraction(-INF, "eps"), "eps"),
    ("rational float", lambda: to_fraction(0.1, "eps"), "eps"),
    ("rational text nan", lambda: to_fraction("nan", "eps"), "eps"),
    ("rational text inf", lambda: to_fraction("inf", "eps"), "eps"),
    ("rational too long", lambda: to_fraction("1" * 5000, "eps"), "eps"),
    ("rational zero denominator", lambda: to_fraction("1/0", "eps"), "eps"),
    ("positive zero", lambda: positive_fraction("0", "eps"), "eps"),
    ("unit above", lambda: unit_interval_fraction("3/2", "score"), "score"),
    ("unit below", lambda: unit_interval_fraction(-1, "score"), "score"),
    ("vocabulary oversized", lambda: _vocabulary(MAX_VIEWS_PER_SLOT + 1), "slots.food.views"),
    ("positions oversized", lambda: Layout(position_slots=("s",) * (MAX_POSITIONS + 1)), "positions"),
    ("attributes oversized", lambda: _policy(MAX_ATTRIBUTES + 1), "attributes"),
    ("unknown attribute", lambda: _policy(1).attribute("nope"), "attribute"),
    ("unknown view", lambda: _vocabulary(2).view("nope"), "slots.food"),
    ("gamma negative", lambda: bernoulli_exp_minus(Fraction(-1), SeededRandomSource(0)), "gamma"),
]

C3_CASES: list[tuple[str, Callable[[], object]]] = [
    ("eps zero", lambda: validate_em_inputs("food", [ONE], Fraction(0), ONE)),
    ("eps negative", lambda: validate_em_inputs("food", [ONE], Fraction(-1), ONE)),
    ("eps nan", lambda: validate_em_inputs("food", [ONE], NAN, ONE)),  # type: ignore[arg-type]
    ("eps inf", lambda: validate_em_inputs("food", [ONE], INF, ONE)),  # type: ignore[arg-type]
    ("Delta zero", lambda: validate_em_inputs("food", [ONE], ONE, Fraction(0))),
    ("Delta nan", lambda: validate_em_inputs("food", [ONE], ONE, NAN)),  # type: ignore[arg-type]
    ("score above 1", lambda: validate_em_inputs("food", [Fraction(3, 2)], ONE, ONE)),
    ("score below 0", lambda: validate_em_inputs("food", [Fraction(-1, 2)], ONE, ONE)),
    ("score nan", lambda: validate_em_inputs("food", [NAN], ONE, ONE)),  # type: ignore[list-item]
]


def _vocabulary(size: int) -> Vocabulary:
    return Vocabulary(slot="food", views=tuple(View(name=f"v{i}") for i in range(size)), generic="v0")


def _policy(count: int) -> Policy:
    attributes = tuple(Attribute(name=f"a{i}", group=frozenset({1}), cap=ONE) for i in range(count))
    return Policy(layout=LAYOUT, attributes=attributes)


@pytest.mark.parametrize(("name", "call", "field"), CASES, ids=[c[0] for c in CASES])
def test_entry_points_refuse_bad_input(name: str, call: Callable[[], object], field: str) -> None:
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert message.startswith(field + ": ") or message.startswith(field + "["), message
    assert "\n" not in message


@pytest.mark.parametrize(("name", "call"), C3_CASES, ids=[c[0] for c in C3_CASES])
def test_em_inputs_are_checked_as_c3(name: str, call: Callable[[], object]) -> None:
    with pytest.raises(ContractViolation) as info:
        call()
    assert info.value.condition == "C3" and "\n" not in str(info.value)
