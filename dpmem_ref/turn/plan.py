"""The exact description of one slot-level release (Algorithm 1, lines 5-16).

`plan_slot` is the one exact description of a release: read set, charge set, eps, the
admission decision and the exact release distribution, given the public prefix, the
ledgers and the store. The sampler (`dpmem_ref.turn.runner`), the durable session, the
exact engine and the proofs all consume it, through the turn planner
(`dpmem_ref.turn.planner.TurnCursor`) or directly. What a turn leaves behind (the control
signal c_t and the turn record) is `dpmem_ref.turn.record`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import attrs

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.core.ledgers import Ledgers, LedgerVector
from dpmem_ref.core.memo import KernelMemo
from dpmem_ref.core.policy import MemoryItem, Store
from dpmem_ref.core.transcript import PublicPrefix, Query, ReleasedViews, SlotRead, TurnRecord
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.interface import ChargePlan, Interface, fallback_distribution
from dpmem_ref.mechanism.construction import validate_em_inputs
from dpmem_ref.mechanism.em import PointMass, ReleaseDistribution
from dpmem_ref.turn import checks


def zero_ledgers(interface: Interface) -> Ledgers:
    """L_a = 0 for every attribute at the start of an interaction (Appendix A)."""
    return tuple(Fraction(0) for _ in interface.policy.attributes)


@attrs.frozen
class TurnFrame:
    """What is fixed for the whole turn: the interface, the store, q_t, the completed
    history, the turn index, G_t and strictness. Shared by every cursor of the turn
    (`dpmem_ref.turn.planner`) and by every plan made in it (`plan_units`)."""

    interface: Interface
    store: Store = attrs.field(repr=False)
    query: Query
    history: tuple[TurnRecord, ...]
    turn: int
    slots: tuple[str, ...]
    strict: bool = True


_new_plan = tuple.__new__  # a named tuple built without its Python-level __new__ (the same tuple)
_new_vector = tuple.__new__


class SlotPlan(NamedTuple):
    """The exact description of one slot-level operation g_{t,j} (Algorithm 1, lines 4-16).

    Public fields follow from the public prefix and the ledgers (C4, C5); the release
    distribution is exact. Read items and scores are private and hidden from the repr.
    `vector_after` is the ledgers after the plan's charge (line 15), as the planner's one
    `LedgerVector`; it compares as the ledgers it stands for, so equality and hash are those
    of the plan's values, whatever scale the planner used. `ledgers_after` is its Fraction view.
    Immutable (a named tuple: built once per slot on the hot path without per-field setattr).
    """

    slot: str
    read: SlotRead
    charge_set: frozenset[str]
    epsilon: Fraction
    admitted: bool
    distribution: ReleaseDistribution
    vocabulary: Vocabulary
    items: tuple[MemoryItem, ...]
    scores: tuple[Fraction, ...] | None
    vector_after: LedgerVector
    # True: the view is a released view re-served by the interface's reuse rule
    # (dpmem_ref.parts.reuse): no read, no charge, no cap test; admitted is False.
    reused: bool = False

    def __repr__(self) -> str:
        return (
            f"SlotPlan(slot={self.slot!r}, charge_set={sorted(self.charge_set)}, epsilon={self.epsilon}, "
            f"admitted={self.admitted}, reused={self.reused}, <private items and scores>)"
        )

    @property
    def ledgers_after(self) -> Ledgers:
        """L_a after this plan's charge, exact Fractions (`vector_after` at the boundary)."""
        return self.vector_after.ledgers()

    @property
    def public_shape(self) -> tuple[str, frozenset[str], Fraction, bool, tuple[str, ...], bool]:
        """What two stores must agree on at the same prefix (C4, C5)."""
        return (self.slot, self.charge_set, self.epsilon, self.admitted, self.vocabulary.names, self.reused)


def _read_store(
    interface: Interface, read: SlotRead, charges: ChargePlan, store: Store
) -> tuple[tuple[MemoryItem, ...], dict[Vocabulary, tuple[tuple[Fraction, ...], ReleaseDistribution]]]:
    """M_R (line 11) and the memo of its selections, made and memoized per (read, store
    object) on a miss of that memo (read by `plan_units`, its one caller): the entry holds
    the store itself and is used only for that very object, so an id is never mistaken for
    another store's; everything cached is a pure function of the read, the store's contents
    and the interface's frozen parts."""
    entry: tuple[Store, tuple[MemoryItem, ...], dict[Vocabulary, tuple[tuple[Fraction, ...], ReleaseDistribution]]]
    entry = (store, charges.items(store), {})
    KernelMemo.put(interface._memo.store_reads, (read, id(store)), entry)
    return entry[1], entry[2]


def _select(
    interface: Interface,
    vocabulary: Vocabulary,
    read: SlotRead,
    items: tuple[MemoryItem, ...],
    epsilon: Fraction,
    where: object,
    memo: dict[Vocabulary, tuple[tuple[Fraction, ...], ReleaseDistribution]],
) -> tuple[tuple[Fraction, ...], ReleaseDistribution]:
    """Lines 12-14: internal scores, the policy-fixed sensitivity bound, and the release
    distribution of the selector. A pure function of (vocabulary, read, items): eps is
    fixed by the read (its charge plan), the scorer reads only the read's public relevance
    and the read-set items (Eq. 5). Memoized privately per (read, store) and vocabulary:
    `plan_units`, its one caller, reads that memo first and calls this on a miss."""
    scores = tuple(interface.scorer.scores(read.relevance_map, vocabulary, items))  # line 12
    sensitivity = interface.scorer.sensitivity(vocabulary)  # line 13
    if len(scores) != len(vocabulary.views):
        raise ContractViolation(
            "C3.score_count", f"{where}: scorer returned {len(scores)} scores for {len(vocabulary.views)} views"
        )
    validate_em_inputs(vocabulary.slot, scores, epsilon, sensitivity)  # C3
    distribution = interface.selector.distribution(vocabulary.names, scores, epsilon, sensitivity)  # line 14
    if len(memo) < 64:
        memo[vocabulary] = (scores, distribution)
    return scores, distribution


class _Where:
    """`query Q, slot S` for messages, formatted only when an error is raised (an f-string
    field with no format spec: object.__format__ gives str(self))."""

    __slots__ = ("query", "slot")

    def __init__(self, query: str, slot: str) -> None:
        self.query = query
        self.slot = slot

    def __str__(self) -> str:
        return f"query {self.query}, slot {self.slot}"


def _route(interface: Interface, prefix: PublicPrefix, slot: str) -> tuple[Vocabulary, SlotRead, ChargePlan]:
    """V_g (C1), line 6 (ReadPolicy) and lines 7-8 (charge set, eps): public prefix only
    (C4). A router that declares it reads neither history nor released views gives a read
    that is a function of (q_t, slot) alone: memoized on those cached-hash keys (`plan_units`,
    the one caller, reads that memo first and calls this on a miss)."""
    router = interface.router
    if router.reads_history or router.reads_released_views:
        read = router.read(prefix, slot)
        return interface.vocabulary(slot), read, interface.charge_plan(read)
    query = prefix.query
    vocabulary = interface.vocabulary(slot)
    read = router.read(PublicPrefix((), query, ()), slot)
    found = (vocabulary, read, interface.charge_plan(read))
    KernelMemo.put(interface._memo.routes, (query, slot), found)
    return found


def plan_units(frame: TurnFrame, vector: LedgerVector, released: ReleasedViews, slot: str) -> SlotPlan:
    """Algorithm 1, lines 5-16, for `slot` in the turn `frame` after the views `released`
    earlier in it (the public prefix h_{t,j} = (frame.history, frame.query, released)), with
    the ledgers as the planner's `LedgerVector`. The hot path of `plan_slot` and of the turn
    planner, on arguments already checked (`plan_slot`, `begin_turn`); nothing sampled."""
    interface, store, query, strict = frame.interface, frame.store, frame.query, frame.strict
    hooks = interface.hooks
    memo = interface._memo
    if interface.reuse.rules:  # before the route: a re-served view needs no charge plan
        reused_plan = _reuse_plan(frame, vector, released, slot, False)
        if reused_plan is not None:
            return reused_plan
    route: tuple[Vocabulary, SlotRead, ChargePlan] | None = None
    if not (interface.router.reads_history or interface.router.reads_released_views):
        route = memo.routes.get((query, slot))  # `_route`'s memo, read here first (the hot path)
    if route is None:
        route = _route(interface, PublicPrefix(frame.history, query, released), slot)
    vocabulary, read, charges = route  # C1; lines 6-8 (C4)
    if hooks.vocabulary is not None:
        vocabulary = hooks.vocabulary(slot, store)  # a store-dependent vocabulary (breaks C1)
    charge_set = charges.charge_set
    epsilon = charges.epsilon
    if strict and not charges.complete:
        missing = sorted(charges.required - charge_set)[0]
        raise ContractViolation(
            "C2.uncharged_read",
            f"{_Where(query.name, slot)}, attribute {missing}: read touches I_{missing} but is not charged to it",
        )
    # C3, before any ledger arithmetic uses it (decided once per charge plan for a plain Fraction)
    if not charges._epsilon_positive and (not isinstance(epsilon, Fraction) or epsilon <= 0):
        raise ContractViolation(
            "C3.invalid_epsilon", f"slot {slot}: epsilon must be a positive exact rational, found {epsilon}"
        )
    units, scale = vector
    step = charges._steps.get(scale)  # `ChargePlan.step`'s memo, read here first
    if step is None:
        step = charges.step(scale)
    if step is None:  # an eps outside the catalogue's scale: widen, exactly
        vector = vector.widened((epsilon,))
        units, scale = vector
        step = epsilon.numerator * (scale // epsilon.denominator)
    caps = memo.cap_units.get(scale) or interface.cap_units(scale)
    assert len(units) == len(caps), "plan_units: one integer ledger per attribute (checked at the public boundary)"
    indices = charges.indices
    if interface.cap_rule.prospective:  # line 9 on exact integers (the rule's declared form)
        admitted = True
        for i in indices:
            if units[i] + step > caps[i]:
                admitted = False
                break
    else:
        ledger_map = dict(zip(interface.policy.attribute_names, vector.ledgers(), strict=True))
        admitted = interface.cap_rule.admits(ledger_map, interface.caps, charge_set, epsilon)
    entry = memo.store_reads.get((read, id(store)))  # `_read_store`'s memo, read here first
    if entry is not None and entry[0] is store:
        items, selections = entry[1], entry[2]
    else:
        items, selections = _read_store(interface, read, charges, store)  # line 11
    scores: tuple[Fraction, ...] | None = None
    distribution: ReleaseDistribution | None = None
    if admitted:
        selected = selections.get(vocabulary)  # `_select`'s memo, read here first
        if selected is None:
            selected = _select(interface, vocabulary, read, items, epsilon, _Where(query.name, slot), selections)
        scores, distribution = selected
        if hooks.fallback is not None and hooks.fallback(scores):
            admitted = False
    if admitted:
        assert distribution is not None
        # Line 15. The charge is part of the plan, fixed before any view is drawn.
        after = list(units)
        for i in indices:
            after[i] += step
            if strict and after[i] > caps[i]:  # C5, asserted after every update (charged ledgers only)
                attribute = interface.policy.attributes[i]
                raise ContractViolation(
                    "C5.ledger_over_cap",
                    f"{_Where(query.name, slot)}, attribute {attribute.name}: "
                    f"ledger {Fraction(after[i], scale)} exceeds cap {attribute.cap}",
                )
        vector_after = _new_vector(LedgerVector, (tuple(after), scale))
    else:
        if interface.reuse.rules:  # refused by the cap test: re-serve the stored view if the rule says so
            reused_plan = _reuse_plan(frame, vector, released, slot, True)
            if reused_plan is not None:
                return reused_plan
        distribution = fallback_distribution(vocabulary)  # line 10
        vector_after = vector  # no charge
    # SlotPlan(slot, read, ...) without the named tuple's Python-level __new__ (the same tuple)
    return _new_plan(
        SlotPlan,
        (
            slot,
            read,
            charge_set,
            epsilon,
            admitted,
            distribution,
            vocabulary,
            items,
            scores,
            vector_after,
            False,
        ),
    )


_NO_CHARGE: frozenset[str] = frozenset()
_ZERO = Fraction(0)


def _reuse_plan(
    frame: TurnFrame, vector: LedgerVector, released: ReleasedViews, slot: str, exhausted: bool
) -> SlotPlan | None:
    """Re-serve a released view (`dpmem_ref.parts.reuse`): the rule decides from public
    inputs, the ledgers (`exhausted`: the cap test refused a fresh selection, C5) and the
    released history (C4); on a hit, a point mass on the stored view with no read, no charge
    and no cap test (post-processing: Theorem 1 unchanged); the ledgers stay. None: select
    afresh. Only a rule that breaks C4 reads the store (`ReuseRule.serve`)."""
    interface, store = frame.interface, frame.store
    rule = interface.reuse.rule_for(frame.query.name, slot)
    if rule is None:
        return None
    read = interface.router.read(PublicPrefix(frame.history, frame.query, released), slot)
    view = rule.serve(frame.history, exhausted, frame.strict, lambda: any(store.items[p - 1].tags for p in read.positions))
    if view is None:
        return None
    vocabulary = interface.vocabulary(slot) if interface.hooks.vocabulary is None else interface.hooks.vocabulary(slot, store)
    distribution = PointMass(views=vocabulary.names, view=view)
    return SlotPlan(slot, read, _NO_CHARGE, _ZERO, False, distribution, vocabulary, (), None, vector, True)


def plan_slot(
    interface: Interface,
    ledgers: Ledgers,
    prefix: PublicPrefix,
    slot: str,
    store: Store,
    strict: bool = True,
) -> SlotPlan:
    """Algorithm 1, lines 5-16, for one slot, as an exact description (nothing sampled).

    The public entry point: arguments are checked (one exact ledger per attribute with
    0 <= L_a <= B_a; dpmem_ref.turn.checks) and refused with InputError."""
    interface = checks.require_interface(interface)
    checks.require_exact_ledgers(interface, ledgers, "ledgers")  # types first, in argument order
    checks.require_prefix(prefix)
    checks.require_store(interface, store)
    strict = checks.require_strict(strict)
    vector = checks.require_ledger_vector(interface, ledgers, "ledgers", interface.ledger_scale, strict)
    slot = checks.require_slot(slot)
    # One slot planned outside a turn: its frame's G_t is the slots released so far and this one.
    slots = tuple(released_slot for released_slot, _ in prefix.released) + (slot,)
    frame = TurnFrame(interface, store, prefix.query, prefix.history, len(prefix.history), slots, strict)
    return plan_units(frame, vector, prefix.released, slot)


def active_slots(interface: Interface, query: Query, history: tuple[TurnRecord, ...], store: Store) -> tuple[str, ...]:
    """Algorithm 1, lines 1-2: G_t = Slot(q_t, history), in policy order."""
    if interface.hooks.routing is not None:
        return interface.hooks.routing(query, history, store)
    router = interface.router
    if router.reads_history:
        return router.active_slots(query, history)
    table = interface._memo.active_slots  # a router that reads no history: G_t is a function of q_t
    found: tuple[str, ...] | None = table.get(query)
    if found is None:
        found = router.active_slots(query, ())
        KernelMemo.put(table, query, found)
    return found
