"""Algorithm 1: one turn of DP-MemView as a pure function.

`plan_slot` returns the exact description of the next slot-level release given the
public prefix, the ledgers and the store: read set, charge set, eps, the admission
decision and the exact release distribution. `run_turn` samples from that description;
the exact engine (`dpmem_ref.analysis`) evaluates it. Both read the same plan.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Protocol

import attrs

from dpmem_ref.errors import ContractViolation, InputError
from dpmem_ref.interface import (
    ControlContext,
    Interface,
    PrivateTurnData,
    PublicPrefix,
    Query,
    SlotRead,
    TurnRecord,
    fallback_distribution,
)
from dpmem_ref.mechanism import ReleaseDistribution, validate_em_inputs
from dpmem_ref.policy import MemoryItem, Store
from dpmem_ref.randomness import RandomSource
from dpmem_ref.views import Vocabulary

Ledgers = tuple[Fraction, ...]


def zero_ledgers(interface: Interface) -> Ledgers:
    """L_a = 0 for every attribute at the start of an interaction (Appendix A)."""
    return tuple(Fraction(0) for _ in interface.policy.attributes)


@attrs.frozen
class InterfaceState:
    """Everything that persists between turns: turn index, ledgers, released history."""

    turn: int
    ledgers: Ledgers
    history: tuple[TurnRecord, ...]

    @classmethod
    def initial(cls, interface: Interface) -> InterfaceState:
        return cls(turn=0, ledgers=zero_ledgers(interface), history=())

    def ledger_map(self, interface: Interface) -> dict[str, Fraction]:
        return dict(zip(interface.policy.attribute_names, self.ledgers, strict=True))


@attrs.frozen(repr=False)
class SlotPlan:
    """The exact description of one slot-level operation g_{t,j} (Algorithm 1, lines 4-16).

    Public fields follow from the public prefix and the ledgers (C4, C5); the release
    distribution is exact. Read items and scores are private and hidden from the repr.
    """

    slot: str
    read: SlotRead
    charge_set: frozenset[str]
    epsilon: Fraction
    admitted: bool
    distribution: ReleaseDistribution
    vocabulary: Vocabulary
    ledgers_after: Ledgers
    items: tuple[MemoryItem, ...] = attrs.field(repr=False)
    scores: tuple[Fraction, ...] | None = attrs.field(repr=False)

    def __repr__(self) -> str:
        return (
            f"SlotPlan(slot={self.slot!r}, charge_set={sorted(self.charge_set)}, epsilon={self.epsilon}, "
            f"admitted={self.admitted}, <private items and scores>)"
        )

    @property
    def public_shape(self) -> tuple[str, frozenset[str], Fraction, bool, tuple[str, ...]]:
        """What two stores must agree on at the same prefix (C4, C5)."""
        return (self.slot, self.charge_set, self.epsilon, self.admitted, self.vocabulary.names)


def check_ledgers(
    interface: Interface, ledgers: Ledgers, where: object, attributes: frozenset[str] | None = None
) -> None:
    """C5: L_a <= B_a, asserted after every update (for `attributes`, default all)."""
    for attribute, value in zip(interface.policy.attributes, ledgers, strict=True):
        if (attributes is None or attribute.name in attributes) and value > attribute.cap:
            raise ContractViolation(
                "C5", f"{where}, attribute {attribute.name}: ledger {value} exceeds cap {attribute.cap}"
            )


def _select(
    interface: Interface,
    vocabulary: Vocabulary,
    read: SlotRead,
    items: tuple[MemoryItem, ...],
    epsilon: Fraction,
    where: object,
) -> tuple[tuple[Fraction, ...], ReleaseDistribution]:
    """Lines 12-14: internal scores, the policy-fixed sensitivity bound, and the release
    distribution of the selector. A pure function of its arguments (the scorer reads only
    the query's public relevance and the read-set items, Eq. 5), memoized on them."""
    key = (vocabulary, read, items, epsilon)
    memo = interface.selection_memo
    found: tuple[tuple[Fraction, ...], ReleaseDistribution] | None = memo.get(key)
    if found is not None:
        return found
    scores = tuple(interface.scorer.scores(read.relevance_map, vocabulary, items))  # line 12
    sensitivity = interface.scorer.sensitivity(vocabulary)  # line 13
    if len(scores) != len(vocabulary.views):
        raise ContractViolation(
            "C3", f"{where}: scorer returned {len(scores)} scores for {len(vocabulary.views)} views"
        )
    validate_em_inputs(vocabulary.slot, scores, epsilon, sensitivity)  # C3
    distribution = interface.selector.distribution(vocabulary.names, scores, epsilon, sensitivity)  # line 14
    if len(memo) < 100_000:
        memo[key] = (scores, distribution)
    return scores, distribution


class _Where:
    """`query Q, slot S` for messages, formatted only when an error is raised."""

    __slots__ = ("query", "slot")

    def __init__(self, query: str, slot: str) -> None:
        self.query = query
        self.slot = slot

    def __str__(self) -> str:
        return f"query {self.query}, slot {self.slot}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def plan_slot(
    interface: Interface,
    ledgers: Ledgers,
    prefix: PublicPrefix,
    slot: str,
    store: Store,
    strict: bool = True,
) -> SlotPlan:
    """Algorithm 1, lines 5-16, for one slot, as an exact description (nothing sampled)."""
    policy = interface.policy
    where = _Where(prefix.query.name, slot)
    hooks = interface.hooks
    vocabulary = hooks.vocabulary(slot, store) if hooks.vocabulary is not None else interface.vocabulary(slot)
    read = interface.router.read(prefix, slot)  # line 6: public prefix only (C4)
    required = policy.gamma_star(read.positions)  # Eq. (4)
    charge_set = required if read.charge is None else read.charge  # line 7
    if strict and not required <= charge_set:
        missing = sorted(required - charge_set)[0]
        raise ContractViolation(
            "C2", f"{where}, attribute {missing}: read touches I_{missing} but is not charged to it"
        )
    epsilon = interface.epsilon_for(charge_set)  # line 8
    ledger_map = dict(zip(policy.attribute_names, ledgers, strict=True))
    admitted = interface.cap_rule.admits(ledger_map, interface.caps, charge_set, epsilon)  # line 9
    items = store.read(read.positions)
    scores: tuple[Fraction, ...] | None = None
    distribution: ReleaseDistribution | None = None
    if admitted:
        scores, distribution = _select(interface, vocabulary, read, items, epsilon, where)  # lines 12-14
        if hooks.fallback is not None and hooks.fallback(scores):
            admitted = False
    if not admitted:
        return SlotPlan(
            slot=slot,
            read=read,
            charge_set=charge_set,
            epsilon=epsilon,
            admitted=False,
            distribution=fallback_distribution(vocabulary),  # line 10
            vocabulary=vocabulary,
            ledgers_after=ledgers,
            items=items,
            scores=scores,
        )
    assert distribution is not None
    # Line 15. The charge is part of the plan, fixed before any view is drawn.
    ledgers_after = tuple(
        value + epsilon if name in charge_set else value
        for name, value in zip(policy.attribute_names, ledgers, strict=True)
    )
    if strict:
        check_ledgers(interface, ledgers_after, where, charge_set)  # only charged ledgers moved
    return SlotPlan(
        slot=slot,
        read=read,
        charge_set=charge_set,
        epsilon=epsilon,
        admitted=True,
        distribution=distribution,
        vocabulary=vocabulary,
        ledgers_after=ledgers_after,
        items=items,
        scores=scores,
    )


def active_slots(interface: Interface, query: Query, history: tuple[TurnRecord, ...], store: Store) -> tuple[str, ...]:
    """Algorithm 1, lines 1-2: G_t = Slot(q_t, history), in policy order."""
    if interface.hooks.routing is not None:
        return interface.hooks.routing(query, history, store)
    return interface.router.active_slots(query, history)


def observe_control(
    interface: Interface,
    query: Query,
    history: tuple[TurnRecord, ...],
    plans: Sequence[SlotPlan],
    views: tuple[tuple[str, str], ...],
    ledgers: Ledgers,
) -> Hashable:
    """Algorithm 1, line 19: c_t from public inputs, released views and ledgers (C6)."""
    context = ControlContext(
        query=query,
        views=views,
        admitted=tuple(p.admitted for p in plans),
        history=history,
        ledgers=tuple(zip(interface.policy.attribute_names, ledgers, strict=True)),
        caps=tuple(interface.policy.caps.items()),
    )
    private = None
    if interface.control.reads_private:
        private = PrivateTurnData(
            items=tuple(p.items for p in plans),
            scores=tuple(p.scores for p in plans),
            vocabularies=tuple(p.vocabulary for p in plans),
        )
    return interface.control.observe(context, private)


class LLMChannel(Protocol):
    """K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2): called with public inputs only."""

    def respond(
        self,
        query: str,
        views: tuple[tuple[str, str], ...],
        prefix: tuple[tuple[str, Hashable, str], ...],
    ) -> str: ...


@attrs.frozen
class TemplateChannel:
    """A deterministic stand-in response model: restates the conditioning it was given."""

    def respond(
        self,
        query: str,
        views: tuple[tuple[str, str], ...],
        prefix: tuple[tuple[str, Hashable, str], ...],
    ) -> str:
        guidance = "; ".join(f"{slot}: {text}" for slot, text in views) or "no memory conditioning"
        return f"Answer to {query!r} following [{guidance}]"


@attrs.frozen
class TurnResult:
    state: InterfaceState
    record: TurnRecord
    plans: tuple[SlotPlan, ...] = attrs.field(repr=False)


def turn_record(
    query: Query,
    views: tuple[tuple[str, str], ...],
    control: Hashable,
    response: str,
    plans: Sequence[SlotPlan],
) -> TurnRecord:
    """Algorithm 1, line 21: the turn appended to the history, with the public accounting
    facts (charge set and eps of each admitted selection; nothing for a fallback)."""
    return TurnRecord(
        query=query.name,
        views=views,
        control=control,
        response=response,
        admitted=tuple(p.admitted for p in plans),
        charges=tuple(
            (p.slot, p.charge_set if p.admitted else frozenset(), p.epsilon if p.admitted else Fraction(0))
            for p in plans
        ),
    )


def run_turn(
    interface: Interface,
    state: InterfaceState,
    query: Query | str,
    store: Store,
    source: RandomSource,
    channel: LLMChannel | None = None,
    strict: bool = True,
) -> TurnResult:
    """Algorithm 1 at turn t: route, plan and sample every active slot, update ledgers,
    observe the control, call the LLM channel on public inputs only, append the turn.

    strict=True (the default) refuses any part that breaks C1-C6 with ContractViolation.
    strict=False runs broken variants unchanged (for audits and counterexamples).
    """
    if isinstance(query, str):
        query = interface.query(query)
    if strict:
        interface.require_contract()
    if store.layout != interface.policy.layout:
        raise InputError("store", "a store over the interface's layout", store.name or "another layout")
    history = state.history
    ledgers = state.ledgers
    released: tuple[tuple[str, str], ...] = ()
    plans: list[SlotPlan] = []
    for slot in active_slots(interface, query, history, store):
        prefix = PublicPrefix(history=history, query=query, released=released)  # line 5
        plan = plan_slot(interface, ledgers, prefix, slot, store, strict=strict)
        ledgers = plan.ledgers_after  # charged before the view is drawn and released
        view = plan.distribution.sample(source)
        released = released + ((slot, view),)
        plans.append(plan)
    control = observe_control(interface, query, history, plans, released, ledgers)
    response = ""
    if channel is not None:
        view_texts = tuple((slot, interface.vocabulary(slot).view(view).text or view) for slot, view in released)
        response = channel.respond(query.text, view_texts, tuple(r.ordinary() for r in history))
    record = turn_record(query, released, control, response, plans)
    new_state = InterfaceState(turn=state.turn + 1, ledgers=ledgers, history=history + (record,))
    return TurnResult(state=new_state, record=record, plans=tuple(plans))


def run_interaction(
    interface: Interface,
    queries: Sequence[Query | str],
    store: Store,
    source: RandomSource,
    channel: LLMChannel | None = None,
    strict: bool = True,
) -> InterfaceState:
    """Run a fixed query sequence from the initial state."""
    state = InterfaceState.initial(interface)
    for query in queries:
        state = run_turn(interface, state, query, store, source, channel=channel, strict=strict).state
    return state
