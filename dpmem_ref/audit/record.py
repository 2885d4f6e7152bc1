"""The witness as records: one `WitnessRow` per turn, built once, rendered by
`dpmem audit` (text and JSON) and by `python -m counterexamples` alike.

A row is rebuilt from the engine's witness (queries and released views) by walking both
stores' turns with the kernel's planner (`begin_turn`), the same plans the search and the
sampler read: per slot the released view, how it was released (an admitted EM selection,
a deterministic selector, or the cap's fallback to the generic view), the eps charged and
to which attributes, and the step loss log Pr[v | A] - log Pr[v | B] in both directions
(`StepTable`, exact enclosures); per turn the control under each store, the ledgers after
the turn (under the numerator store, the pathwise L_a(omega) of Theorem 1's proof) and the
turn's step loss both ways. A slot the other store does not activate, or a turn whose
controls differ, is where the transcript becomes impossible under one store: its step is
infinite (the witness ends there).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction

import attrs

from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.analysis.loss import INFINITE, ZERO, Loss
from dpmem_ref.analysis.steps import StepTable
from dpmem_ref.analysis.witness import WitnessTurn
from dpmem_ref.core.policy import Store
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.em import ExponentialWeights
from dpmem_ref.turn.plan import SlotPlan
from dpmem_ref.turn.planner import begin_turn
from dpmem_ref.turn.state import InterfaceState

RELEASES = ("em", "deterministic", "fallback", "reused")  # how a slot's view was released


@attrs.frozen
class SlotRow:
    """One slot-level release of a witness turn."""

    slot: str
    view: str
    release: str  # one of RELEASES: admitted EM draw, admitted deterministic selector, cap fallback
    generic: bool  # the view released is the slot's generic view
    epsilon: Fraction  # eps charged (0 for a fallback or an uncharged read)
    charged: tuple[str, ...]  # attributes charged
    step_ab: Loss  # log Pr[v | A] - log Pr[v | B] of this release
    step_ba: Loss


@attrs.frozen
class WitnessRow:
    """One turn of the witness, as every renderer shows it."""

    turn: int
    query: str
    slots: tuple[SlotRow, ...]
    control_a: Hashable
    control_b: Hashable
    note: str
    ledgers_after: tuple[tuple[str, Fraction], ...]
    step_ab: Loss  # the turn's loss, A over B (sum of its slots; infinite when controls differ)
    step_ba: Loss

    @property
    def controls_differ(self) -> bool:
        return self.control_a != self.control_b


def _release(plan: SlotPlan) -> str:
    if plan.reused:  # a released view re-served at no charge (dpmem_ref.parts.reuse)
        return "reused"
    if not plan.admitted:
        return "fallback"
    return "em" if isinstance(plan.distribution, ExponentialWeights) else "deterministic"


def witness_rows(
    interface: Interface,
    store_a: Store,
    store_b: Store,
    witness: Sequence[WitnessTurn],
    numerator: LossDirection | str = LossDirection.A_OVER_B,
    strict: bool = False,
) -> tuple[WitnessRow, ...]:
    """The records of a witness (module docstring); `numerator` (a `LossDirection`, or its
    short side "a" / "b") names the store whose ledgers and plans the rows show."""
    direction = LossDirection.of(numerator)
    steps = StepTable()
    names = interface.policy.attribute_names
    state_a = state_b = InterfaceState.initial(interface)
    rows: list[WitnessRow] = []
    for index, turn in enumerate(witness):
        query = interface.query(turn.query)
        cursor_a = begin_turn(interface, state_a, query, store_a, strict=strict)
        cursor_b = begin_turn(interface, state_b, query, store_b, strict=strict)
        slots: list[SlotRow] = []
        total_ab, total_ba = ZERO, ZERO
        broken = False
        for slot, view in turn.views:
            plan_a = None if cursor_a.done else cursor_a.plan()
            plan_b = None if cursor_b.done else cursor_b.plan()
            shown = direction.numerator(plan_a, plan_b)
            if shown is None or shown.slot != slot:
                break  # the numerator's own transcript ends here (impossible from this slot on)
            if plan_a is None or plan_b is None or plan_a.slot != plan_b.slot:
                step_ab, step_ba, broken = INFINITE, INFINITE, True
            else:
                found = {v: (ab, ba) for v, ab, ba in steps.steps(plan_a, plan_b)}
                step_ab, step_ba = found.get(view, (INFINITE, INFINITE))
                broken = broken or view not in found  # neither store releases it: impossible from here
            charged = tuple(sorted(shown.charge_set)) if shown.admitted else ()
            slots.append(
                SlotRow(
                    slot=slot,
                    view=view,
                    release=_release(shown),
                    generic=view == shown.vocabulary.generic,
                    epsilon=shown.epsilon if charged else Fraction(0),
                    charged=charged,
                    step_ab=step_ab,
                    step_ba=step_ba,
                )
            )
            total_ab, total_ba = step_ab.add(total_ab), step_ba.add(total_ba)
            if not cursor_a.done and plan_a is not None and plan_a.slot == slot:
                cursor_a = cursor_a.release(view)
            if not cursor_b.done and plan_b is not None and plan_b.slot == slot:
                cursor_b = cursor_b.release(view)
        shown_cursor = direction.numerator(cursor_a, cursor_b)
        if turn.control_a != turn.control_b:
            total_ab, total_ba = INFINITE, INFINITE
        rows.append(
            WitnessRow(
                turn=index + 1,
                query=turn.query,
                slots=tuple(slots),
                control_a=turn.control_a,
                control_b=turn.control_b,
                note=turn.note,
                ledgers_after=tuple(zip(names, shown_cursor.ledgers, strict=True)),
                step_ab=total_ab,
                step_ba=total_ba,
            )
        )
        if broken or turn.note or not (cursor_a.done and cursor_b.done):
            break
        state_a, _ = cursor_a.finish(control=turn.control_a)
        state_b = InterfaceState(turn=state_a.turn, ledgers=cursor_b.ledgers, history=state_a.history)
    return tuple(rows)
