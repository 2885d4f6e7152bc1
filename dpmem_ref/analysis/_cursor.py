"""A private stand-in for the kernel's one turn planner (issue 14, helper K's `begin_turn`).

The API is exactly the one the kernel exports at merge:

    begin_turn(interface, state, query, store, strict=True) -> TurnCursor   (immutable, forkable)
    cursor.done; cursor.plan() -> SlotPlan; cursor.release(view) -> TurnCursor
    cursor.control() -> Hashable (c_t, once done); cursor.finish(response, control) -> (state, record)

built here on today's `plan_slot`, `active_slots`, `observe_control` and `turn_record`
(turn.py), so every search, replay and enumeration of the engine drives one turn loop.
At merge: delete this module and import `begin_turn` / `TurnCursor` from `dpmem_ref`.
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from dpmem_ref.interface import Interface, PublicPrefix, Query, TurnRecord
from dpmem_ref.policy import Store
from dpmem_ref.turn import InterfaceState, Ledgers, SlotPlan, active_slots, observe_control, plan_slot, turn_record


@attrs.frozen
class TurnCursor:
    """Algorithm 1 at turn t, part-way: the slots released so far and the ledgers after them."""

    interface: Interface
    state: InterfaceState
    query: Query
    store: Store
    strict: bool
    slots: tuple[str, ...]
    released: tuple[tuple[str, str], ...] = ()
    plans: tuple[SlotPlan, ...] = ()
    ledgers: Ledgers = ()
    _plan: list[SlotPlan] = attrs.field(factory=list, eq=False, repr=False)

    @property
    def done(self) -> bool:
        return len(self.released) == len(self.slots)

    def plan(self) -> SlotPlan:
        """The next slot's exact plan (`plan_slot` at the current public prefix h_{t,j})."""
        if not self._plan:
            if self.done:
                raise ValueError("every active slot of this turn has been released")
            prefix = PublicPrefix(history=self.state.history, query=self.query, released=self.released)
            slot = self.slots[len(self.released)]
            self._plan.append(plan_slot(self.interface, self.ledgers, prefix, slot, self.store, strict=self.strict))
        return self._plan[0]

    def release(self, view: str) -> TurnCursor:
        """The cursor after the next slot released `view` (ledgers := plan.ledgers_after)."""
        plan = self.plan()
        return attrs.evolve(
            self,
            released=self.released + ((plan.slot, view),),
            plans=self.plans + (plan,),
            ledgers=plan.ledgers_after,
            plan=[],
        )

    def control(self) -> Hashable:
        """c_t (Algorithm 1, line 19), once every active slot has released."""
        if not self.done:
            raise ValueError("the control is observed once every active slot has released")
        return observe_control(self.interface, self.query, self.state.history, self.plans, self.released, self.ledgers)

    def finish(self, response: str = "", control: Hashable = None) -> tuple[InterfaceState, TurnRecord]:
        """The state after the turn and the turn's record (line 21); `control` defaults to c_t."""
        observed = self.control() if control is None else control
        record = turn_record(self.query, self.released, observed, response, self.plans)
        state = InterfaceState(turn=self.state.turn + 1, ledgers=self.ledgers, history=self.state.history + (record,))
        return state, record


def begin_turn(
    interface: Interface, state: InterfaceState, query: Query, store: Store, strict: bool = True
) -> TurnCursor:
    """Start turn t (lines 1-2: G_t = Slot(q_t, history))."""
    slots = active_slots(interface, query, state.history, store)
    return TurnCursor(interface, state, query, store, strict, slots, ledgers=state.ledgers)
