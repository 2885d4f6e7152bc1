"""Exact refusal messages of the kernel's policy, budget and EM-input checks (issue 15,
point 3): mutmut changes each message's field, expectation or found value, and only a
whole-message assertion tells. Also the accepted boundaries next to each refusal. Turn and
sampler mutants: test_kernel_mutants_layout.py, test_kernel_mutants_exact.py.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import Attribute, ContractViolation, InputError, Layout, MemoryItem, OnlineBudget, Policy, Store
from dpmem_ref.core.policy import MAX_ATTRIBUTES, MAX_POSITIONS
from dpmem_ref.mechanism.construction import validate_em_inputs
from dpmem_ref.mechanism.em import ExponentialWeights

LAYOUT = Layout(("g", "g", "h"))
A = Attribute("a", frozenset({1}), Fraction(1))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Layout(()), "positions: expected at least one position, found 'an empty list'"),
        (lambda: Layout(("g",) * (MAX_POSITIONS + 1)), "positions: expected at most 4096 positions, found 4097"),
        (lambda: Layout(("g", "")), "positions[2]: expected a slot name, found ''"),
        (lambda: Layout(("g", 3)), "positions[2]: expected a slot name, found 3"),
        (lambda: LAYOUT.check_position(0, "pos"), "pos: expected a position in 1..3, found 0"),
        (lambda: LAYOUT.check_position(4, "pos"), "pos: expected a position in 1..3, found 4"),
        (lambda: LAYOUT.check_position(True, "pos"), "pos: expected a position in 1..3, found True"),
        (lambda: LAYOUT.check_position("1", "pos"), "pos: expected a position in 1..3, found '1'"),
        (lambda: Attribute("a", frozenset({1}), Fraction(0)),
         "attributes.a.cap: expected a positive exact rational, found Fraction(0, 1)"),
        (lambda: Attribute("a", frozenset({1}), 1), "attributes.a.cap: expected a positive exact rational, found 1"),
        (lambda: Attribute("a", frozenset(), Fraction(1)),
         "attributes.a.group: expected a non-empty list of positions, found '[]'"),
        (lambda: Policy(LAYOUT, (A, A)), "attributes: expected unique attribute names, found ['a', 'a']"),
        (lambda: Policy(LAYOUT, tuple(Attribute(f"a{i}", frozenset({1}), Fraction(1)) for i in range(MAX_ATTRIBUTES + 1))),
         "attributes: expected at most 64 attributes, found 65"),
        (lambda: Policy(LAYOUT, (Attribute("b", frozenset({1, 4}), Fraction(1)),)),
         "attributes.b.group: expected a position in 1..3, found 4"),
        (lambda: Policy(LAYOUT, (A,)).attribute("zz"), "attribute: expected one of ['a'], found 'zz'"),
        (lambda: Store(LAYOUT, (MemoryItem(),), "M"), "stores.M: expected 3 items, found 1"),
        (lambda: Store(LAYOUT, (MemoryItem(),)), "stores.?: expected 3 items, found 1"),
        (lambda: Store.from_mapping(LAYOUT, {4: MemoryItem()}, "M"), "stores.M: expected a position in 1..3, found 4"),
        (lambda: Store.from_mapping(LAYOUT, {0: MemoryItem()}), "stores.?: expected a position in 1..3, found 0"),
        (lambda: OnlineBudget(K=2).epsilon(frozenset(), {"a": Fraction(1)}),
         "charge set: expected a non-empty set of attributes, found '{}'"),
        (lambda: OnlineBudget(K=2).epsilon(frozenset({"zz", "b"}), {"a": Fraction(1)}),
         "charge set: expected attributes among ['a'], found ['b', 'zz']"),
        (lambda: ExponentialWeights(views=("a", "b"), exponents=(Fraction(1),)),
         "exponential mechanism: expected one exponent per view, found 1"),
        (lambda: ExponentialWeights(views=(), exponents=()), "exponential mechanism: expected one exponent per view, found 0"),
        (lambda: ExponentialWeights(views=("a", "b"), exponents=(Fraction(1), 1)),
         "exponential mechanism exponent #1: expected an exact rational (Fraction), found 'int'"),
    ],
)
def test_bad_input_is_refused_with_one_exact_line(build, message):
    with pytest.raises(InputError) as error:
        build()
    assert str(error.value) == message


def test_the_boundaries_next_to_each_refusal_are_accepted():
    assert Layout(("g",) * MAX_POSITIONS).size == MAX_POSITIONS
    assert LAYOUT.check_position(1, "pos") == 1 and LAYOUT.check_position(3, "pos") == 3
    many = Policy(LAYOUT, tuple(Attribute(f"a{i}", frozenset({1, 3}), Fraction(1)) for i in range(MAX_ATTRIBUTES)))
    assert len(many.attribute_names) == MAX_ATTRIBUTES and many.gamma_star({3}) == frozenset(many.attribute_names)
    policy = Policy(LAYOUT, (A, Attribute("b", frozenset({2, 3}), Fraction(2))))
    assert policy.attribute("b").cap == 2 and policy.gamma_star({2}) == frozenset({"b"})
    assert policy.gamma_star({1, 2}) == frozenset({"a", "b"}) and policy.gamma_star(()) == frozenset()
    store = Store.from_mapping(LAYOUT, {1: MemoryItem(frozenset({"x"})), 3: MemoryItem(frozenset({"z"}))}, "M")
    assert store.items == (MemoryItem(frozenset({"x"})), MemoryItem(), MemoryItem(frozenset({"z"})))
    assert store.name == "M" and Store.from_mapping(LAYOUT, {}).name == ""
    assert OnlineBudget(K=2).epsilon(frozenset({"a"}), {"a": Fraction(1)}) == Fraction(1, 2)


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
