"""C5 as exact arithmetic: the prospective check, the fallback and the ledger update.

- Ledgers and epsilons are Fractions; eps = B/K charged K times sums to exactly B, so
  exactly K selections are admitted and the (K+1)-th falls back (2/3 + 2/3 + 2/3 = 2,
  and the float-hostile 1/10 + 1/10 + 1/10 = 3/10). A strict L + eps < B would refuse
  the K-th; a float ledger would refuse it or stop being a Fraction.
- The check is prospective (L + eps <= B), not retrospective (L < B): with mixed charge
  sets a ledger below its cap must still refuse an eps that would overshoot.
- The charge is part of the plan, fixed before any view is drawn: `plan_slot` takes no
  random source, its plan already carries the charge, and a draw that crashes midway
  cannot undo or postpone it; `run_turn`'s new ledgers are the last plan's.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from dpmem_ref import (
    Attribute,
    FunctionScorer,
    Interface,
    InterfaceState,
    Layout,
    MemoryItem,
    OnlineBudget,
    Policy,
    ProspectiveCap,
    PublicPrefix,
    Query,
    SeededRandomSource,
    SlotRead,
    Store,
    View,
    Vocabulary,
    plan_slot,
    run_turn,
)
from proofs_as_tests.strategies import cases

TIGHT = [(Fraction(2), 3), (Fraction(3, 10), 3), (Fraction(7, 10), 7), (Fraction(1), 10), (Fraction(1), 3),
         (Fraction(6, 10), 6), (Fraction(9, 10), 9), (Fraction(1, 3), 5), (Fraction(11, 10), 11)]


def swap_score(relevance, vocabulary, items):
    bit = 1 if any("x" in item.tags for item in items) else 0
    return (Fraction(1 - bit), Fraction(bit))


def two_attribute_interface(cap_a: Fraction, cap_b: Fraction, K: int) -> tuple[Interface, Store]:
    """Position 1 in I_a only, position 2 in I_a and I_b: query `solo` charges {a},
    query `joint` charges {a, b} at eps = min(B_a, B_b) / K."""
    layout = Layout(("g", "g"))
    policy = Policy(layout, (Attribute("a", frozenset({1, 2}), cap_a), Attribute("b", frozenset({2}), cap_b)))
    vocabulary = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    interface = Interface(
        policy=policy,
        vocabularies=(vocabulary,),
        queries=(
            Query("solo", "solo", (SlotRead("g", frozenset({1})),)),
            Query("joint", "joint", (SlotRead("g", frozenset({2})),)),
        ),
        scorer=FunctionScorer(swap_score, Fraction(1)),
        budget=OnlineBudget(K),
    )
    store = Store.from_mapping(layout, {1: MemoryItem(frozenset({"x"})), 2: MemoryItem(frozenset({"x"}))})
    return interface, store


def run(interface, store, names, seed=0):
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(seed)
    admitted = []
    for name in names:
        result = run_turn(interface, state, name, store, source)
        admitted.extend(result.record.admitted)
        state = result.state
        for value in state.ledgers:
            assert type(value) is Fraction, f"ledger value {value!r} is not an exact rational"
    return state, admitted


@given(st.sampled_from(TIGHT), st.integers(0, 3))
def test_exactly_k_charges_admitted(cap_k, seed):
    cap, K = cap_k
    interface, store = two_attribute_interface(cap, cap * 100, K)
    state, admitted = run(interface, store, ["solo"] * (K + 2), seed)
    note(f"B={cap} K={K} admitted={admitted}")
    assert admitted == [True] * K + [False, False]
    assert state.ledgers == (cap, Fraction(0))


def test_two_thirds_three_times_is_two():
    interface, store = two_attribute_interface(Fraction(2), Fraction(2), 3)
    state, admitted = run(interface, store, ["solo"] * 4)
    assert admitted == [True, True, True, False]
    assert state.ledgers[0] == 2 and type(state.ledgers[0]) is Fraction


def test_prospective_not_retrospective():
    """B_a = 1, B_b = 1/2, K = 2: joint charges eps = 1/4 to a and b, solo charges 1/2
    to a. After joint + solo, L_a = 3/4 < 1, but 3/4 + 1/2 > 1: the next solo must fall
    back even though L_a < B_a."""
    interface, store = two_attribute_interface(Fraction(1), Fraction(1, 2), 2)
    state, admitted = run(interface, store, ["joint", "solo", "solo", "joint"])
    assert admitted == [True, True, False, True]
    assert state.ledgers == (Fraction(1), Fraction(1, 2))


@pytest.mark.parametrize(
    ("ledger", "cap", "eps", "expected"),
    [
        (Fraction(1, 2), Fraction(1), Fraction(2, 3), False),  # L < B but L + eps > B
        (Fraction(4, 3), Fraction(2), Fraction(2, 3), True),  # L + eps == B: the last admissible charge
        (Fraction(0), Fraction(2, 3), Fraction(2, 3), True),
        (Fraction(1, 5), Fraction(3, 10), Fraction(1, 10), True),  # 0.2 + 0.1 == 0.3 exactly
        (Fraction(3, 10), Fraction(3, 10), Fraction(1, 10), False),
    ],
)
def test_prospective_cap_table(ledger, cap, eps, expected):
    assert ProspectiveCap().admits({"a": ledger}, {"a": cap}, frozenset({"a"}), eps) is expected


class CrashingSource:
    """A random source that fails on its first draw (crash injection)."""

    def __init__(self) -> None:
        self.calls = 0

    def randbelow(self, bound: int) -> int:
        self.calls += 1
        raise RuntimeError("crash mid-draw")


@given(cases())
def test_charge_fixed_before_the_draw(case):
    note(repr(case))
    interface = case.interface
    state = InterfaceState.initial(interface)
    names = interface.policy.attribute_names
    for query in interface.queries:
        ledgers = state.ledgers
        released = ()
        source = SeededRandomSource(1)
        result = run_turn(interface, state, query, case.store_a, source)
        for plan in result.plans:
            prefix = PublicPrefix(history=state.history, query=query, released=released)
            fresh = plan_slot(interface, ledgers, prefix, plan.slot, case.store_a)  # no randomness consumed
            expected = tuple(
                value + fresh.epsilon if fresh.admitted and name in fresh.charge_set else value
                for name, value in zip(names, ledgers, strict=True)
            )
            assert fresh.ledgers_after == expected  # the plan already carries the charge
            assert all(type(v) is Fraction for v in fresh.ledgers_after)
            crashing = CrashingSource()
            if fresh.admitted and len(fresh.distribution.support()) > 1:
                with pytest.raises(RuntimeError):
                    fresh.distribution.sample(crashing)
                assert crashing.calls == 1
            assert fresh.ledgers_after == expected  # a crashed draw leaves the charge in place
            ledgers = fresh.ledgers_after
            released = released + ((plan.slot, dict(result.record.views)[plan.slot]),)
        assert result.state.ledgers == ledgers
        if result.plans:
            assert result.state.ledgers == result.plans[-1].ledgers_after
        state = result.state
