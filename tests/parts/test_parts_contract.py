"""One contract suite per part protocol, inherited once per implementation.

Each part declares its capabilities (dpmem_ref.parts.protocols); these suites check that
the declarations are present and true on exact inputs: a rule that says `prospective`
admits exactly when L_a + eps <= B_a, a part with `violates=None` never breaks the
condition its protocol guards, a part that names a condition does break it somewhere,
and a control that says it does not read history, views or private data gives the same
value when they change.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from fractions import Fraction
from typing import Any, ClassVar

import mpmath
import pytest

from counterexamples.memory_dependent import LedgerStatusControl
from counterexamples.table4 import ScheduledRouter
from counterexamples.zoo.float_ledger import FloatConfiguredBudget, FloatLedgerCap
from counterexamples.zoo.strict_less_cap import StrictlyBelowCap
from dpmem_ref import (
    ArgmaxSelector,
    ControlContext,
    ExponentialMechanismSelector,
    FallbackControl,
    FixedRouter,
    MemoryItem,
    NoCap,
    NoControl,
    OnlineBudget,
    PreallocatedBudget,
    PrivateTurnData,
    ProspectiveCap,
    PublicPrefix,
    Query,
    RawEvidenceControl,
    SlotRead,
    TopScoreControl,
    TurnRecord,
    View,
    Vocabulary,
)
from dpmem_ref.core.errors import CONDITIONS, InputError
from proofs_as_tests.strategies import BudgetStatusControl, HistoryRouter, ViewCountControl

CAPS = {"a": Fraction(1), "b": Fraction(3, 2), "c": Fraction(2)}
CHARGE_SETS = [frozenset(s) for r in (1, 2, 3) for s in itertools.combinations(sorted(CAPS), r)]


def declares_part(part: Any) -> None:
    assert isinstance(part.name, str) and part.name
    assert part.violates is None or part.violates in CONDITIONS


# ------------------------------------------------------------------ budget rules


class BudgetRuleContract:
    rule: ClassVar[Any]

    def test_name(self) -> None:
        assert isinstance(self.rule.name, str) and self.rule.name

    def test_epsilon_is_a_positive_exact_rational_at_most_every_charged_cap(self) -> None:
        for charge_set in CHARGE_SETS:
            epsilon = self.rule.epsilon(charge_set, CAPS)
            assert isinstance(epsilon, Fraction) and epsilon > 0
            assert epsilon <= min(CAPS[a] for a in charge_set)

    def test_epsilon_is_a_function_of_public_inputs(self) -> None:
        for charge_set in CHARGE_SETS:
            assert self.rule.epsilon(charge_set, CAPS) == self.rule.epsilon(frozenset(sorted(charge_set)), dict(CAPS))

    def test_refuses_an_empty_charge_set(self) -> None:
        with pytest.raises(InputError):
            self.rule.epsilon(frozenset(), CAPS)


class TestOnlineBudget(BudgetRuleContract):
    rule = OnlineBudget(K=3)


class TestPreallocatedBudget(BudgetRuleContract):
    rule = PreallocatedBudget.from_mapping({"a": 2, "b": 3, "c": 4})


class TestFloatConfiguredBudget(BudgetRuleContract):
    rule = FloatConfiguredBudget(K=10)


# ------------------------------------------------------------------ cap rules

EPSILONS = (Fraction(1, 10), Fraction(0.1), Fraction(1, 3), Fraction(2, 3), Fraction(1, 2))


def cap_cases() -> list[tuple[dict[str, Fraction], frozenset[str], Fraction]]:
    """Ledgers that are whole numbers of equal charges (what a run reaches) at each eps."""
    cases = []
    for epsilon in EPSILONS:
        for k in range(0, 25):
            for charge_set in CHARGE_SETS:
                ledgers = {a: (k * epsilon if a in charge_set else Fraction(0)) for a in CAPS}
                cases.append((ledgers, charge_set, epsilon))
    return cases


class CapRuleContract:
    rule: ClassVar[Any]

    def test_declares(self) -> None:
        declares_part(self.rule)
        assert isinstance(self.rule.prospective, bool)

    def test_prospective_means_exactly_the_line_9_test(self) -> None:
        if not self.rule.prospective:
            pytest.skip("not declared prospective")
        for ledgers, charge_set, epsilon in cap_cases():
            expected = all(ledgers[a] + epsilon <= CAPS[a] for a in charge_set)
            assert self.rule.admits(ledgers, CAPS, charge_set, epsilon) == expected

    def test_compliant_rules_never_admit_past_a_cap_and_broken_ones_do(self) -> None:
        overshoots = [
            (ledgers, charge_set, epsilon)
            for ledgers, charge_set, epsilon in cap_cases()
            if self.rule.admits(ledgers, CAPS, charge_set, epsilon)
            and any(ledgers[a] + epsilon > CAPS[a] for a in charge_set)
        ]
        if self.rule.violates is None:
            assert overshoots == []
        else:
            assert self.rule.violates == "C5" and overshoots


class TestProspectiveCap(CapRuleContract):
    rule = ProspectiveCap()


class TestNoCap(CapRuleContract):
    rule = NoCap()


class TestFloatLedgerCap(CapRuleContract):
    rule = FloatLedgerCap()


class TestStrictlyBelowCap(CapRuleContract):
    rule = StrictlyBelowCap()


# ------------------------------------------------------------------ selectors

VIEWS = ("generic", "v1", "v2", "v3")
SCORES = [Fraction(k, 4) for k in range(5)]


class SelectorContract:
    selector: ClassVar[Any]

    def test_declares(self) -> None:
        declares_part(self.selector)
        assert isinstance(self.selector.exponential_mechanism, bool)
        assert (self.selector.violates is None) == self.selector.exponential_mechanism
        assert self.selector.violates in (None, "C3")

    def test_support_is_within_the_vocabulary(self) -> None:
        for scores in itertools.product(SCORES[::2], repeat=len(VIEWS)):
            law = self.selector.distribution(VIEWS, scores, Fraction(1), Fraction(1, 2))
            assert law.support() and set(law.support()) <= set(VIEWS)

    def test_neighbouring_scores_stay_within_eps_exactly_when_declared_em(self) -> None:
        """|u - u'|_inf <= Delta must give log-ratio <= eps for every view (Eq. 7) for the
        EM; a selector that declares C3 breaks it for some neighbouring pair."""
        epsilon, sensitivity = Fraction(1), Fraction(1, 2)
        worst = mpmath.mpf(0)
        for scores in itertools.product(SCORES[::2], repeat=3):
            for shift in itertools.product((-sensitivity, Fraction(0), sensitivity), repeat=3):
                other = tuple(s + d for s, d in zip(scores, shift, strict=True))
                if not all(0 <= s <= 1 for s in other):
                    continue
                law = self.selector.distribution(VIEWS[:3], scores, epsilon, sensitivity)
                law2 = self.selector.distribution(VIEWS[:3], other, epsilon, sensitivity)
                for view in VIEWS[:3]:
                    if (view in law.support()) != (view in law2.support()):
                        worst = mpmath.inf
                    elif view in law.support():
                        worst = max(worst, abs(law.log_probability(view) - law2.log_probability(view)))
        within = worst <= epsilon + mpmath.mpf("1e-30")
        assert within == self.selector.exponential_mechanism


class TestExponentialMechanismSelector(SelectorContract):
    selector = ExponentialMechanismSelector()


class TestArgmaxSelector(SelectorContract):
    selector = ArgmaxSelector()


# ------------------------------------------------------------------ controls

VOCABULARY = Vocabulary(
    slot="food", views=(View("generic"), View("v1", compatible=frozenset({"t"}))), generic="generic"
)
QUERY = Query(name="q", text="?", reads=(SlotRead(slot="food", positions=frozenset({1})),))
RECORD = TurnRecord(query="q", views=(("food", "v1"),), control=None, response="", admitted=(True,), charges=())


def context(views: str = "generic", history: tuple[TurnRecord, ...] = (), spent: Fraction = Fraction(0)) -> ControlContext:
    return ControlContext(
        query=QUERY,
        views=(("food", views),),
        admitted=(True,),
        history=history,
        ledgers=(("a", spent),),
        caps=(("a", Fraction(2)),),
    )


def private(tags: frozenset[str], score: Fraction) -> PrivateTurnData:
    return PrivateTurnData(
        items=((MemoryItem(tags=tags),),), scores=((score, score),), vocabularies=(VOCABULARY,)
    )


class ControlContract:
    control: ClassVar[Any]

    def observe(self, ctx: ControlContext, data: PrivateTurnData) -> Hashable:
        return self.control.observe(ctx, data if self.control.reads_private else None)

    def test_declares(self) -> None:
        declares_part(self.control)
        for flag in (self.control.reads_private, self.control.reads_views, self.control.reads_history):
            assert isinstance(flag, bool)
        # Reading private data is exactly the C6 breach a control can declare.
        assert (self.control.violates == "C6") == self.control.reads_private

    def test_value_is_hashable(self) -> None:
        hash(self.observe(context(), private(frozenset(), Fraction(0))))

    def test_undeclared_inputs_do_not_move_the_value(self) -> None:
        data = private(frozenset(), Fraction(0))
        base = self.observe(context(), data)
        if not self.control.reads_views:
            assert self.observe(context(views="v1"), data) == base
        if not self.control.reads_history:
            assert self.observe(context(history=(RECORD,)), data) == base
        if not self.control.reads_private:
            assert self.observe(context(), private(frozenset({"t"}), Fraction(1))) == base

    def test_declared_private_read_is_observable(self) -> None:
        if not self.control.reads_private:
            pytest.skip("reads no private data")
        low = self.observe(context(), private(frozenset(), Fraction(0)))
        high = self.observe(context(), private(frozenset({"t"}), Fraction(1)))
        assert low != high


class TestFallbackControl(ControlContract):
    control = FallbackControl()


class TestNoControl(ControlContract):
    control = NoControl()


class TestRawEvidenceControl(ControlContract):
    control = RawEvidenceControl()


class TestTopScoreControl(ControlContract):
    control = TopScoreControl()


class TestLedgerStatusControl(ControlContract):
    control = LedgerStatusControl()


class TestBudgetStatusControl(ControlContract):
    control = BudgetStatusControl()


class TestViewCountControl(ControlContract):
    control = ViewCountControl(generics=("generic",))


# ------------------------------------------------------------------ routers


class RouterContract:
    router: ClassVar[Any]

    def test_declares(self) -> None:
        assert isinstance(self.router.reads_history, bool)
        assert isinstance(self.router.reads_released_views, bool)

    def test_undeclared_inputs_do_not_move_routing(self) -> None:
        two = Query(
            name="q",
            text="?",
            reads=(SlotRead("food", frozenset({1, 2})), SlotRead("health", frozenset({3}))),
        )
        history = (TurnRecord("q", (("food", "v1"),), None, "", (True,), ()),)
        if not self.router.reads_history:
            assert self.router.active_slots(two, ()) == self.router.active_slots(two, history)
            assert self.router.state_key(()) == self.router.state_key(history)
        for slot in ("food", "health"):
            quiet = PublicPrefix((), two, ())
            if not self.router.reads_history:
                assert self.router.read(quiet, slot) == self.router.read(PublicPrefix(history, two, ()), slot)
            if not self.router.reads_released_views:
                assert self.router.read(quiet, slot) == self.router.read(
                    PublicPrefix((), two, (("food", "generic"),)), slot
                )


class TestFixedRouter(RouterContract):
    router = FixedRouter()


class TestHistoryRouter(RouterContract):
    router = HistoryRouter(generics=("generic",))


class TestScheduledRouter(RouterContract):
    router = ScheduledRouter(("q", "q"))
