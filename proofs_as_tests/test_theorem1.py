"""Theorem 1 (adaptive transcript privacy), re-proved on generated deployments.

For every generated interface, adjacent pair M ~_a M', adaptive strategy and LLM
channel, and every augmented transcript omega with positive probability under either
store (exact enumeration over the horizon):

    log Pr[omega | M] - log Pr[omega | M']  <=  L_a(omega)  <=  B_a     (both directions)

with the loss enclosed by mpmath intervals and compared with the exact rational ledger
(no tolerance). The ledger is the same under both stores (the proof's induction), the
query and response factors are identical rationals (they cancel), and the ordinary
transcript (views summed out) loses no more than the worst augmented transcript that
projects onto it. Tightness twin: the pathwise ledger reaches B_a exactly when the
budget allows K = B_a / eps charges, and the loss is strictly positive there.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from dpmem_ref import Attribute, Interface, Layout, MemoryItem, OnlineBudget, Policy, Query, SlotRead, Store
from dpmem_ref.analysis import worst_case_loss
from proofs_as_tests import transcripts as tx
from proofs_as_tests.strategies import cases
from proofs_as_tests.strategies.events import FallbackWatch, report_theorem1
from proofs_as_tests.strategies.hard import budget_cases


def theorem1_cases():
    """Mostly cases aimed at budget exhaustion near B_a, one in four from the general pool."""
    return st.integers(0, 3).flatmap(lambda k: cases() if k == 3 else budget_cases())


def worst_lower(leaves) -> Fraction:
    """A certified lower bound of the largest loss, either direction, over the leaves."""
    worst = Fraction(0)
    for leaf in leaves:
        for loss in (leaf.loss_ab, leaf.loss_ba):
            if loss is None or loss is tx.INF or tx.is_exact_zero(loss):
                continue
            low = tx.lower_fraction(loss)
            if low is not None and low > worst:
                worst = low
    return worst


def check_theorem1(case) -> list[tx.Leaf]:
    watch = FallbackWatch()
    leaves = tx.enumerate_joint(case, visit=watch)
    attribute = case.attribute
    cap = case.interface.policy.attribute(attribute).cap
    for leaf in leaves:
        note(f"transcript {leaf.transcript}")
        assert not leaf.truncated, f"one-sided transcript ({leaf.truncated})"
        # Induction of the proof: both executions hold the same ledgers along omega.
        assert leaf.ledgers_a == leaf.ledgers_b
        ledger = tx.ledger_of(case, leaf.ledgers_a, attribute)
        assert isinstance(ledger, Fraction)
        assert ledger <= cap, f"L_a(omega) = {ledger} > B_a = {cap}"
        for loss in (leaf.loss_ab, leaf.loss_ba):
            assert loss is not tx.INF, "a transcript possible under one store only"
            assert tx.certified_le(loss, ledger), f"loss {loss} exceeds L_a(omega) = {ledger}"
        # Positive probability on one side implies it on the other (common support).
        assert (leaf.logp_a is None) == (leaf.logp_b is None)
    report_theorem1(case.horizon, cap, worst_lower(leaves), watch)
    return leaves


@given(theorem1_cases())
def test_every_augmented_transcript_loss_below_pathwise_ledger(case):
    note(repr(case))
    check_theorem1(case)


@given(theorem1_cases())
def test_ordinary_transcript_loss_below_augmented(case):
    """tau_T is a projection of the augmented transcript: summing the views out can only
    shrink the log ratio (mediant inequality), so it too is <= L_a <= B_a."""
    note(repr(case))
    leaves = check_theorem1(case)
    cap = case.interface.policy.attribute(case.attribute).cap
    with mpmath.workdps(tx.IV_DPS), tx.iv_precision(tx.IV_DPS):
        for _ordinary, group in tx.leaves_by_ordinary(leaves):
            if all(tx.is_exact_zero(x.loss_ab) for x in group):
                continue  # every summand is identical on both sides: exact identity
            prob_a = sum((mpmath.iv.exp(_iv(leaf.logp_a)) for leaf in group), mpmath.iv.mpf(0))
            prob_b = sum((mpmath.iv.exp(_iv(leaf.logp_b)) for leaf in group), mpmath.iv.mpf(0))
            ordinary_ab = mpmath.iv.log(prob_a) - mpmath.iv.log(prob_b)
            worst_aug = max(tx.upper(leaf.loss_ab) for leaf in group)
            worst_ledger = max(tx.ledger_of(case, leaf.ledgers_a, case.attribute) for leaf in group)
            # Not refuted: the ordinary loss cannot exceed the worst augmented one.
            assert tx.lower(ordinary_ab) <= worst_aug
            # Certified against the exact rational ledger and cap, both directions.
            assert tx.certified_le(ordinary_ab, worst_ledger)
            assert tx.certified_le(-ordinary_ab, worst_ledger)
            assert worst_ledger <= cap


def _iv(value):
    # The mp value is known to 60 digits: widen it by one unit in the 55th digit.
    radius = mpmath.mpf(10) ** (-55) * (1 + abs(value))
    return mpmath.iv.mpf([value - radius, value + radius])


@given(cases(adaptive=False, max_horizon=2))
def test_engine_worst_case_agrees_with_enumeration(case):
    """The auditor's memoized worst case (every query at every prefix) is <= B_a and is
    attained by some enumerated transcript of the naive joint walk."""
    note(repr(case))
    interface = case.interface
    result = worst_case_loss(interface, case.store_a, case.store_b, case.horizon)
    cap = interface.policy.attribute(case.attribute).cap
    assert result.holds(cap)
    # Enumerate with a strategy that may play every query (a uniform randomized one).
    from proofs_as_tests.strategies import QueryStrategy

    names = tuple(q.name for q in interface.queries)
    uniform = QueryStrategy(kind="mixed", choices=names, signal="views", weights=(tuple(1 for _ in names),))
    import attrs

    leaves = tx.enumerate_joint(attrs.evolve(case, strategy=uniform))
    best = max(tx.upper(leaf.loss_ab) for leaf in leaves)
    engine = result.a_over_b.upper
    assert abs(best - engine) < mpmath.mpf(10) ** -40


# ---------------------------------------------------------------------------------------
# Tightness twin: the pathwise ledger reaches B_a exactly (2/3 + 2/3 + 2/3 = 2).


def _swap_interface(cap: Fraction, K: int) -> tuple[Interface, Store, Store]:
    from dpmem_ref import FunctionScorer, View, Vocabulary

    layout = Layout(("g",))
    policy = Policy(layout, (Attribute("a", frozenset({1}), cap),))
    vocabulary = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")

    def score(relevance, vocab, items):
        bit = 1 if "x" in items[0].tags else 0
        return (Fraction(1 - bit), Fraction(bit))

    interface = Interface(
        policy=policy,
        vocabularies=(vocabulary,),
        queries=(Query("q", "q", (SlotRead("g", frozenset({1})),)),),
        scorer=FunctionScorer(score, Fraction(1)),
        budget=OnlineBudget(K),
    )
    store = Store.from_mapping(layout, {1: MemoryItem(frozenset({"x"}))})
    other = Store.from_mapping(layout, {1: MemoryItem(frozenset())})
    return interface, store, other


@pytest.mark.parametrize(("cap", "K"), [(Fraction(2), 3), (Fraction(3, 10), 3), (Fraction(1), 7), (Fraction(7, 10), 10)])
def test_tightness_ledger_reaches_cap(cap, K):
    interface, store, other = _swap_interface(cap, K)
    result = worst_case_loss(interface, store, other, K + 2)
    # K charges of eps = B/K are admitted, the (K+1)-th falls back: L_a = B_a exactly.
    from dpmem_ref.analysis import replay_transcript

    witness = result.a_over_b.witness
    replay = replay_transcript(interface, store, witness)
    assert replay.ledgers == (cap,)
    assert sum(1 for turn in witness for _ in turn.views if turn.control_a[0][1] == "released") == K
    # The two-view swap pair attains exactly K * eps / 2 = B_a / 2 (Prop. 1's construction).
    with mpmath.workdps(60):
        expected = mpmath.mpf(cap.numerator) / cap.denominator / 2
        assert abs(result.a_over_b.midpoint - expected) < mpmath.mpf(10) ** -50


# ---------------------------------------------------------------------------------------
# Tightness twin: with 128 views at the sensitivity extreme, K charges nearly exhaust B_a.


def _extreme_interface(cap: Fraction, K: int, n: int = 256) -> tuple[Interface, Store, Store]:
    from dpmem_ref import FunctionScorer, View, Vocabulary

    layout = Layout(("g",))
    policy = Policy(layout, (Attribute("a", frozenset({1}), cap),))
    names = ["g.gen"] + [f"g.v{k}" for k in range(1, n)]
    vocabulary = Vocabulary("g", tuple(View(name) for name in names), "g.gen")

    def score(relevance, vocab, items):
        # M: (1, 0, ..., 0); M': (0, 1, ..., 1): every view moves by Delta = 1.
        bit = 1 if "x" in items[0].tags else 0
        return (Fraction(bit),) + (Fraction(1 - bit),) * (n - 1)

    interface = Interface(
        policy=policy,
        vocabularies=(vocabulary,),
        queries=(Query("q", "q", (SlotRead("g", frozenset({1})),)),),
        scorer=FunctionScorer(score, Fraction(1)),
        budget=OnlineBudget(K),
    )
    store = Store.from_mapping(layout, {1: MemoryItem(frozenset({"x"}))})
    other = Store.from_mapping(layout, {1: MemoryItem(frozenset())})
    return interface, store, other


@pytest.mark.parametrize(("cap", "K"), [(Fraction(1, 2), 1), (Fraction(1), 1), (Fraction(1), 2), (Fraction(3, 2), 3)])
def test_tightness_bound_nearly_attained(cap, K):
    interface, store, other = _extreme_interface(cap, K, n=128)
    result = worst_case_loss(interface, store, other, K + 1)
    assert result.holds(cap)  # Theorem 1 at B_a ...
    lower = tx.lower_fraction(result.a_over_b.value)
    assert lower > cap * Fraction(99, 100)  # ... and certified to fail at 0.99 B_a
