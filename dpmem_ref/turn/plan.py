"""The exact description of one slot-level release (Algorithm 1, lines 5-16).

`plan_slot` is the one exact description of a release: read set, charge set, eps, the
admission decision and the exact release distribution, given the public prefix, the
ledgers and the store. The sampler (`dpmem_ref.turn.runner`), the durable session, the
exact engine and the proofs all consume it, through the turn planner
(`dpmem_ref.turn.planner.TurnCursor`) or directly. What a turn leaves behind (the control
signal c_t and the turn record) is `dpmem_ref.turn.record`.

`plan_units` runs lines 5-16 as named steps: the route, eps and caps on the ledgers' scale
and the read set (`PlanCaches.slot_facts`, memoized, `dpmem_ref.turn.caches`), C2 and C3
(`_refuse_charge_plan`), the cap rule of line 9 (`_admits`), the EM selection of lines 12-14
(`PlanCaches.selection`) or the fallback of line 10, and the charge of line 15 (`_charged`).
Ledgers are one `LedgerVector` throughout; Fractions only at the boundary (`ledgers_after`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import attrs

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.core.ledgers import Ledgers, LedgerVector, Units
from dpmem_ref.core.policy import MemoryItem, Store
from dpmem_ref.core.transcript import PublicPrefix, Query, ReleasedViews, SlotRead, TurnRecord
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.interface import ChargePlan, Interface, fallback_distribution
from dpmem_ref.mechanism.em import PointMass, ReleaseDistribution
from dpmem_ref.turn import checks
from dpmem_ref.turn.caches import PlanCaches, Where, caches_of


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
    # The interface's memoized planning steps (`dpmem_ref.turn.caches`), looked up once per turn.
    caches: PlanCaches = attrs.field(
        default=attrs.Factory(lambda frame: caches_of(frame.interface), takes_self=True), eq=False, repr=False
    )


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


def _refuse_charge_plan(charges: ChargePlan, frame: TurnFrame, slot: str) -> None:
    """C2 then C3, before any ledger arithmetic: a strict plan whose read touches an
    attribute it is not charged to (Gamma*(R) of Eq. 4 not within the charge set of line 7),
    then an eps (line 8) that is not a positive exact rational. Called when one may fail."""
    epsilon = charges.epsilon
    if frame.strict and not charges.complete:
        missing = sorted(charges.required - charges.charge_set)[0]
        raise ContractViolation(
            "C2.uncharged_read",
            f"{Where(frame.query.name, slot)}, attribute {missing}: read touches I_{missing} but is not charged to it",
        )
    if not isinstance(epsilon, Fraction) or epsilon <= 0:
        raise ContractViolation(
            "C3.invalid_epsilon", f"slot {slot}: epsilon must be a positive exact rational, found {epsilon}"
        )


def _admits(interface: Interface, charges: ChargePlan, vector: LedgerVector, step: int, caps: Units) -> bool:
    """Line 9, the cap rule: for the prospective rule, L_a + eps <= B_a for every charged
    attribute, on the exact integer counts (C5); any other rule is asked on the Fraction
    ledgers (`CapRule.admits`)."""
    if interface.cap_rule.prospective:  # the rule's declared form, on exact integers
        units = vector.units
        for i in charges.indices:
            if units[i] + step > caps[i]:
                return False
        return True
    ledger_map = dict(zip(interface.policy.attribute_names, vector.ledgers(), strict=True))
    return interface.cap_rule.admits(ledger_map, interface.caps, charges.charge_set, charges.epsilon)


def _charged(frame: TurnFrame, slot: str, charges: ChargePlan, vector: LedgerVector, step: int, caps: Units) -> LedgerVector:
    """Line 15: L_a <- L_a + eps for every a in the charge set, fixed in the plan before any
    view is drawn (charge-before-release); strict plans assert C5 (L_a <= B_a) after every
    update of a charged ledger."""
    units, scale = vector
    indices = charges.indices
    strict = frame.strict
    after = list(units)
    for i in indices:
        after[i] += step
        if strict and after[i] > caps[i]:  # C5, asserted after every update (charged ledgers only)
            attribute = frame.interface.policy.attributes[i]
            raise ContractViolation(
                "C5.ledger_over_cap",
                f"{Where(frame.query.name, slot)}, attribute {attribute.name}: "
                f"ledger {Fraction(after[i], scale)} exceeds cap {attribute.cap}",
            )
    return _new_vector(LedgerVector, (tuple(after), scale))


def plan_units(frame: TurnFrame, vector: LedgerVector, released: ReleasedViews, slot: str) -> SlotPlan:
    """Algorithm 1, lines 5-16, for `slot` in the turn `frame` after the views `released`
    earlier in it (the public prefix h_{t,j} = (frame.history, frame.query, released)), with
    the ledgers as the planner's `LedgerVector`. The hot path of `plan_slot` and of the turn
    planner, on arguments already checked (`plan_slot`, `begin_turn`); nothing sampled.

    The steps, in the paper's order: a re-served view (`_reuse_plan`); the route, eps and
    caps on the ledgers' scale, and the read set (`PlanCaches.slot_facts`: C1, lines 6-8
    and 11); C2 and C3 (`_refuse_charge_plan`); the cap rule (`_admits`, line 9); the
    selection (`PlanCaches.selection`, lines 12-14) or the fallback (line 10); the charge
    (`_charged`, line 15)."""
    interface = frame.interface
    if interface.reuse.rules:  # before the route: a re-served view needs no charge plan
        reused_plan = _reuse_plan(frame, vector, released, slot, False)
        if reused_plan is not None:
            return reused_plan
    caches = frame.caches
    store, vocabulary, read, charges, scale, step, caps, items, selections = caches.slot_facts(
        frame, released, slot, vector.scale
    )
    hooks = interface.hooks
    if hooks.vocabulary is not None:
        vocabulary = hooks.vocabulary(slot, store)  # a store-dependent vocabulary (breaks C1)
    if step is None or (frame.strict and not charges.complete):
        _refuse_charge_plan(charges, frame, slot)
    assert step is not None
    if scale != vector.scale:  # an eps outside the catalogue's scale: widen, exactly
        vector = vector.widened((charges.epsilon,))
    assert len(vector.units) == len(caps), "plan_units: one integer ledger per attribute (checked at the public boundary)"
    admitted = _admits(interface, charges, vector, step, caps)  # line 9
    scores: tuple[Fraction, ...] | None = None
    distribution: ReleaseDistribution | None = None
    if admitted:
        scores, distribution = caches.selection(selections, vocabulary, read, items, charges.epsilon, frame.query, slot)
        if hooks.fallback is not None and hooks.fallback(scores):
            admitted = False
    if admitted:
        vector_after = _charged(frame, slot, charges, vector, step, caps)  # line 15
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
            charges.charge_set,
            charges.epsilon,
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
    """Algorithm 1, lines 1-2: G_t = Slot(q_t, history), in policy order (`PlanCaches.active_slots`)."""
    return caches_of(interface).active_slots(query, history, store)
