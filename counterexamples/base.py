"""Shared parts of the Appendix B.5 constructions.

A construction is data: an interface built from kernel parts (some of them broken), an
adjacent pair M ~_a M', a horizon, the adaptive strategy's query catalogue, the event the
paper names, and the closed form the paper derives for it. `counterexamples.runner`
evaluates it with the kernel's exact engine; nothing here computes a ratio.

The score functions are the paper's (Appendix B.5, "Complete attribute charging"): a binary
feature phi of the differing position i*, phi(m_{i*}) = 1, phi(m'_{i*}) = 0, and
u(v_1; X) = phi(x_{i*}), u(v_0; X) = 1 - phi(x_{i*}), Delta = 1. They are expressed with the
kernel's linear tag scorer (weights r = 0, c = 1, s = 0, declared sensitivity 1): v_1 is
compatible with the tag "evidence" that M holds at i*, v_0 with the tag "no-evidence" that
M' holds there. The same interfaces are therefore expressible as TOML files.

The "k-view spread" generalises the two views: v_1 against k views w_1..w_k that all score
1 under M' and 0 under M. Its per-release log ratio is
    l_k(eps) = eps/2 + log(1 + k e^{eps/2}) - log(e^{eps/2} + k),
which is eps/2 for k = 1 (the paper's case) and tends to eps as k grows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any

import attrs
import mpmath

from dpmem_ref.core.errors import CONDITIONS
from dpmem_ref.core.policy import Attribute, Layout, MemoryItem, Policy, Store
from dpmem_ref.core.transcript import PublicPrefix, Query, SlotRead, TurnRecord
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.interface import Interface
from dpmem_ref.parts.broken import PrivateHooks
from dpmem_ref.parts.budget import BudgetRule, OnlineBudget
from dpmem_ref.parts.caps import ProspectiveCap
from dpmem_ref.parts.controls import FallbackControl
from dpmem_ref.parts.protocols import CapRule, ControlRule, Router, Selector
from dpmem_ref.parts.routers import FixedRouter
from dpmem_ref.parts.scoring import LinearTagScorer, LinearWeights, Scorer
from dpmem_ref.parts.selectors import ExponentialMechanismSelector

EVIDENCE = "evidence"
NO_EVIDENCE = "no-evidence"
SLOT = "s"
TARGET = "a"
OTHER = "b"
DIGITS = 60

# u(v; X) = 1{v compatible with a tag at the read set}: the paper's phi / 1 - phi scores.
INDICATOR_SCORER = LinearTagScorer(
    weights=LinearWeights(relevance=Fraction(0), compatibility=Fraction(1), specificity=Fraction(0)),
    declared_sensitivity=Fraction(1),
)

# The compliant parts (module-level singletons: the defaults of build_interface).
EM_SELECTOR = ExponentialMechanismSelector()
PROSPECTIVE_CAP = ProspectiveCap()
FALLBACK_CONTROL = FallbackControl()
NO_HOOKS = PrivateHooks()
FIXED_ROUTER = FixedRouter()

ClosedForm = Callable[[], mpmath.mpf]


def spread_log_ratio(epsilon: Fraction, k: int) -> mpmath.mpf:
    """l_k(eps): the log ratio of releasing v_1 under M versus M' in the k-view spread."""
    half = mpmath.mpf(epsilon.numerator) / (2 * epsilon.denominator)
    return half + mpmath.log(1 + k * mpmath.exp(half)) - mpmath.log(mpmath.exp(half) + k)


def spread_vocabulary(k: int = 1, slot: str = SLOT, neutral_compatible: bool = True) -> Vocabulary:
    """V_g = {v_0 (generic), v_1, w_2..w_k}: v_1 reads "evidence", v_0 and w_i "no-evidence".

    neutral_compatible=False gives v_0 no tags (it then scores 0 under both stores).
    """
    neutral = frozenset({NO_EVIDENCE}) if neutral_compatible else frozenset()
    views = [
        View(name="v0", text="generic response", compatible=neutral),
        View(name="v1", text="evidence-tailored response", compatible=frozenset({EVIDENCE})),
    ]
    views += [View(name=f"w{i}", text=f"neutral mode {i}", compatible=neutral) for i in range(2, k + 1)]
    return Vocabulary(slot=slot, views=tuple(views), generic="v0")


@attrs.frozen
class Setting:
    """A one-slot policy: position 1 (i*) in I_a (and in I_b when `overlap`), position 2 public."""

    cap_a: Fraction = Fraction(2)
    cap_b: Fraction | None = None
    overlap: bool = False

    def policy(self) -> Policy:
        layout = Layout(position_slots=(SLOT, SLOT))
        attributes = [Attribute(name=TARGET, group=frozenset({1}), cap=self.cap_a)]
        if self.cap_b is not None:
            group_b = frozenset({1, 2}) if self.overlap else frozenset({2})
            attributes.append(Attribute(name=OTHER, group=group_b, cap=self.cap_b))
        return Policy(layout=layout, attributes=tuple(attributes))


def adjacent_pair(policy: Policy) -> tuple[Store, Store]:
    """M ~_a M': they differ only at i* = 1, which holds evidence for a in M only."""
    layout = policy.layout
    store_a = Store.from_mapping(layout, {1: MemoryItem(tags=frozenset({EVIDENCE}), text="evidence for a")}, "M")
    store_b = Store.from_mapping(layout, {1: MemoryItem(tags=frozenset({NO_EVIDENCE}), text="a-neutral")}, "M_prime")
    return store_a, store_b


def read_query(
    name: str = "q", positions: frozenset[int] = frozenset({1}), charge: frozenset[str] | None = None
) -> Query:
    return Query(name=name, text=f"query {name}", reads=(SlotRead(slot=SLOT, positions=positions, charge=charge),))


def build_interface(
    name: str,
    setting: Setting,
    queries: tuple[Query, ...],
    budget: BudgetRule,
    vocabulary: Vocabulary | None = None,
    scorer: Scorer = INDICATOR_SCORER,
    selector: Selector = EM_SELECTOR,
    cap_rule: CapRule = PROSPECTIVE_CAP,
    control: ControlRule = FALLBACK_CONTROL,
    hooks: PrivateHooks = NO_HOOKS,
    router: Router = FIXED_ROUTER,
) -> Interface:
    return Interface(
        policy=setting.policy(),
        vocabularies=(vocabulary or spread_vocabulary(),),
        queries=queries,
        scorer=scorer,
        budget=budget,
        router=router,
        selector=selector,
        cap_rule=cap_rule,
        control=control,
        hooks=hooks,
        name=name,
    )


def online(k: int) -> OnlineBudget:
    return OnlineBudget(K=k)


@attrs.frozen
class Construction:
    """One counterexample: everything needed to evaluate it, nothing evaluated.

    `closed_form` is the paper's value of the worst-case log ratio (mpmath.inf for a
    one-sided event); `event_closed_form` gives (Pr[O | M], Pr[O | M']) where the paper
    states them. `evaluate` overrides the default engine run for constructions built on
    plan_slot rather than expressed as kernel parts (see their docstrings).
    """

    name: str
    kind: str  # "B.5", "Table 4" or "zoo"
    violates: str
    title: str
    interface: Interface
    store_a: Store
    store_b: Store
    horizon: int
    bound: Fraction
    event: str
    closed_form: ClosedForm
    attribute: str = TARGET
    queries: tuple[Query, ...] | None = None
    event_closed_form: Callable[[], tuple[mpmath.mpf, mpmath.mpf]] | None = None
    event_probabilities: Callable[[], tuple[mpmath.mpf, mpmath.mpf]] | None = None
    toml: str | None = None
    notes: str = ""
    # For constructions that are not a set of kernel parts (an execution-order bug): the
    # exact evaluation built on plan_slot, and why no strict kernel check sees the bug.
    custom_engine: Callable[[], Any] | None = None
    unrefusable_because: str = ""
    # Extra facts for the JSON report (ledgers, admissions, ...), computed on demand.
    extra: Callable[[], dict[str, Any]] | None = None

    def __attrs_post_init__(self) -> None:
        if self.violates not in CONDITIONS:
            raise ValueError(f"violates must be one of {CONDITIONS}, found {self.violates!r}")


# A public router along a fixed trajectory (Table 4, counterexamples/table4.py).


@attrs.frozen
class ScheduledRouter:
    """Public routing along a fixed trajectory: at turn t only the t-th scheduled query
    activates its slots (any other query activates none). A function of (q_t, history
    length) only (C4), so the engine's worst case over strategies is the worst case over
    every release outcome of this trajectory."""

    schedule: tuple[str, ...]
    reads_history: bool = True
    reads_released_views: bool = False

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        t = len(history)
        if t < len(self.schedule) and self.schedule[t] == query.name:
            return tuple(read.slot for read in query.reads)
        return ()

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        return prefix.query.read_for(slot)

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        return len(history)
