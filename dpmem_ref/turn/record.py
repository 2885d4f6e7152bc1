"""What a turn of Algorithm 1 leaves behind: the control signal c_t (line 19, C6) and the
turn record appended to the history (line 21), from the turn's slot plans
(`dpmem_ref.turn.plan.SlotPlan`). The turn planner (`dpmem_ref.turn.planner`) calls both.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction

from dpmem_ref.core.ledgers import Ledgers
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.parts.protocols import ControlContext, PrivateTurnData
from dpmem_ref.turn.plan import SlotPlan

_NO_CHARGE: frozenset[str] = frozenset()
_ZERO = Fraction(0)


def observe_control(
    interface: Interface,
    query: Query,
    history: tuple[TurnRecord, ...],
    plans: Sequence[SlotPlan],
    views: tuple[tuple[str, str], ...],
    ledgers: Ledgers,
) -> Hashable:
    """Algorithm 1, line 19: c_t from public inputs, released views and ledgers (C6)."""
    policy = interface.policy
    context = ControlContext(
        query,
        views,
        tuple([p.admitted for p in plans]),
        history,
        tuple(zip(policy.attribute_names, ledgers, strict=True)),
        policy.cap_items,
        tuple([p.reused for p in plans]) if interface.reuse.rules else (),
    )
    private = None
    if interface.control.reads_private:
        private = PrivateTurnData(
            items=tuple(p.items for p in plans),
            scores=tuple(p.scores for p in plans),
            vocabularies=tuple(p.vocabulary for p in plans),
        )
    return interface.control.observe(context, private)


def release_kinds(plans: Sequence[SlotPlan]) -> tuple[tuple[str, str], ...]:
    """Per slot of a turn: "fresh" (an admitted, charged selection), "reused" (a released
    view re-served at no charge) or "fallback" (the generic view at no charge)."""
    return tuple([(p.slot, "reused" if p.reused else "fresh" if p.admitted else "fallback") for p in plans])


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
        query.name,
        views,
        control,
        response,
        tuple([p.admitted for p in plans]),
        tuple([(p.slot, p.charge_set, p.epsilon) if p.admitted else (p.slot, _NO_CHARGE, _ZERO) for p in plans]),
    )
