"""The turn planner: Algorithm 1 at turn t as an immutable, forkable cursor.

Every consumer drives this one loop - the sampling runner (`run_turn`), the durable
session, the exact engine and the proofs' transcript enumeration - so a change to
Algorithm 1 lands here and in `plan_slot` only.

API
---
    cursor = begin_turn(interface, state, query, store, strict=True)   # lines 1-2: G_t
    while not cursor.done:
        plan = cursor.plan()            # lines 5-16 for the next active slot: a SlotPlan
        cursor = cursor.release(view)   # record (slot, view); ledgers := plan.ledgers_after
    control = cursor.control()          # line 19: c_t (C6)
    state, record = cursor.finish(response, control)   # line 21

- `TurnCursor` is frozen: `release` returns a new cursor, so the exact engine branches on
  every view of `plan.distribution.support()` from one cursor (`plan()` is computed once
  per cursor and shared by its forks).
- The charge is fixed in the plan before any view is drawn (charge-before-release): the
  ledgers after `release` are `plan.ledgers_after` whatever view is released. A durable
  session passes the committed ledgers instead (`release(view, ledgers=...)`) and, when
  its store refused a charge another process raced for, re-plans on them (`rebase`).
- Fields: `frame` (what the turn fixes: interface, store, query, history, turn, slots
  (G_t), strict - each also a property of the cursor), `released` ((slot, view), ...),
  `plans` (the SlotPlans of the released slots); the ledgers are ONE `LedgerVector`
  (`vector`: exact integer counts `units` over `scale`), with the Fraction view `ledgers`.
- For memo keys (the exact engine): `units`, `scale` and `released` are cheap, hashable
  and exact; a cursor itself compares by value but hashing it hashes the interface.
- strict=True refuses any part that breaks C1-C6 (the static check at `begin_turn`, C2
  and C5 at each plan); strict=False runs broken variants unchanged (audits, counterexamples).
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from dpmem_ref.contract import require_contract
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.ledgers import Ledgers, LedgerVector, Units
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import PublicPrefix, Query, TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.randomness import RandomSource
from dpmem_ref.turn.caches import caches_of
from dpmem_ref.turn.checks import (
    require_interface,
    require_ledger_ranges,
    require_ledger_vector,
    require_query,
    require_state,
    require_store,
    require_strict,
)
from dpmem_ref.turn.plan import SlotPlan, TurnFrame, plan_units
from dpmem_ref.turn.record import observe_control, turn_record
from dpmem_ref.turn.state import InterfaceState


@attrs.frozen(repr=False)
class TurnCursor:
    """Algorithm 1 at turn t, after the releases in `released` (see the module doc)."""

    frame: TurnFrame
    vector: LedgerVector
    released: tuple[tuple[str, str], ...] = ()
    plans: tuple[SlotPlan, ...] = ()
    # plan() of this cursor, computed once and shared by every fork (a pure function of
    # the fields above, so the cache never changes a value).
    _plan: SlotPlan | None = attrs.field(init=False, default=None, eq=False)

    @property
    def interface(self) -> Interface:
        return self.frame.interface

    @property
    def units(self) -> Units:
        """The ledgers' integer counts (`vector.units`): L_a = units_a / scale."""
        return self.vector.units

    @property
    def scale(self) -> int:
        """The ledgers' common denominator (`vector.scale`)."""
        return self.vector.scale

    @property
    def store(self) -> Store:
        return self.frame.store

    @property
    def query(self) -> Query:
        return self.frame.query

    @property
    def history(self) -> tuple[TurnRecord, ...]:
        return self.frame.history

    @property
    def turn(self) -> int:
        return self.frame.turn

    @property
    def slots(self) -> tuple[str, ...]:
        """G_t, the active slots in order."""
        return self.frame.slots

    @property
    def strict(self) -> bool:
        return self.frame.strict

    def __repr__(self) -> str:
        return (
            f"TurnCursor(query={self.query.name!r}, turn={self.turn}, slots={list(self.slots)}, "
            f"released={list(self.released)})"
        )

    @property
    def done(self) -> bool:
        """Every active slot has released its view."""
        return len(self.released) == len(self.frame.slots)

    @property
    def slot(self) -> str:
        """The next active slot g_{t,j}."""
        if self.done:
            raise InputError("cursor", "a turn with a slot left to plan", "every slot released")
        return self.slots[len(self.released)]

    @property
    def prefix(self) -> PublicPrefix:
        """h_{t,j}: history, query and the views released earlier this turn (C4)."""
        return PublicPrefix(history=self.history, query=self.query, released=self.released)

    @property
    def ledgers(self) -> Ledgers:
        """L_a in policy order, exact Fractions (the vector's Fraction view)."""
        return self.vector.ledgers()

    def plan(self) -> SlotPlan:
        """Algorithm 1, lines 5-16 for the next active slot at the current public prefix."""
        plan = self._plan
        if plan is not None:
            return plan
        frame = self.frame
        released = self.released
        if len(released) == len(frame.slots):
            raise InputError("cursor", "a turn with a slot left to plan", "every slot released")
        plan = plan_units(frame, self.vector, released, frame.slots[len(released)])
        object.__setattr__(self, "_plan", plan)
        return plan

    def release(self, view: str, ledgers: Ledgers | None = None) -> TurnCursor:
        """Record `view` as the next slot's release. The ledgers become the plan's
        `ledgers_after` (charged in the plan, before the release), or `ledgers` when a
        durable store committed other values.

        Lenient cursors (strict=False) also follow a view outside this store's vocabulary:
        the exact engine walks both stores along one public transcript, and under a C1
        breach (a store-dependent vocabulary) a view only the other store can release is
        the transcript that tells them apart."""
        plan = self.plan()
        if self.strict and view not in plan.vocabulary.names:
            raise InputError(f"slot {plan.slot}", f"a view of {list(plan.vocabulary.names)}", view)
        vector = plan.vector_after
        if ledgers is not None:  # committed values from a durable store: checked at this boundary
            vector = require_ledger_vector(self.interface, ledgers, "ledgers", vector.scale, self.strict)
        return TurnCursor(self.frame, vector, self.released + ((plan.slot, view),), self.plans + (plan,))

    def release_sampled(self, source: RandomSource) -> TurnCursor:
        """`cursor = cursor.release(cursor.plan().distribution.sample(source))` until done,
        in one pass: the sampler's loop (`run_turn`) without an intermediate cursor per slot.
        The same plans, draws, views and ledgers as the step-by-step loop, and the same
        refusal of a view outside the vocabulary (strict)."""
        frame = self.frame
        strict = frame.strict
        vector, released, plans = self.vector, self.released, self.plans
        plan = self._plan
        for slot in frame.slots[len(released) :]:
            if plan is None:
                plan = plan_units(frame, vector, released, slot)
            view = plan.distribution.sample(source)
            if strict and view not in plan.vocabulary.names:
                raise InputError(f"slot {plan.slot}", f"a view of {list(plan.vocabulary.names)}", view)
            vector = plan.vector_after
            released += ((plan.slot, view),)
            plans += (plan,)
            plan = None
        return TurnCursor(frame, vector, released, plans)

    def rebase(self, ledgers: Ledgers) -> TurnCursor:
        """The same position in the turn over other ledgers (a durable store's committed
        values): the next plan is made afresh from them."""
        vector = require_ledger_vector(self.interface, ledgers, "ledgers", self.interface.ledger_scale, self.strict)
        return attrs.evolve(self, vector=vector)

    def control(self) -> Hashable:
        """c_t (Algorithm 1, line 19; C6), once every slot has released."""
        if not self.done:
            raise InputError("cursor", "a turn whose every slot has released", f"{len(self.released)} released")
        return observe_control(self.interface, self.query, self.history, self.plans, self.released, self.ledgers)

    def finish(self, response: str = "", control: Hashable | None = None) -> tuple[InterfaceState, TurnRecord]:
        """Algorithm 1, line 21: the turn record and the next state. `control` defaults to
        `self.control()` (pass it when already observed)."""
        frame = self.frame
        if control is None:
            if not self.done:
                raise InputError("cursor", "a turn whose every slot has released", f"{len(self.released)} released")
            control = observe_control(frame.interface, frame.query, frame.history, self.plans, self.released, self.ledgers)
        record = turn_record(frame.query, self.released, control, response, self.plans)
        state = InterfaceState.planned(frame.turn + 1, frame.history + (record,), self.vector)
        return state, record


def begin_turn(
    interface: Interface,
    state: InterfaceState,
    query: Query | str,
    store: Store,
    strict: bool = True,
) -> TurnCursor:
    """Algorithm 1, lines 1-2 at turn t = state.turn: G_t = Slot(q_t, history).

    The public entry point: every argument is checked (types; one exact ledger per
    attribute with 0 <= L_a <= B_a) and refused with InputError (dpmem_ref.turn.checks)."""
    interface = require_interface(interface)
    require_store(interface, store)
    require_state(interface, state)
    return open_turn(interface, state, require_query(query), store, require_strict(strict))


def open_turn(
    interface: Interface,
    state: InterfaceState,
    query: Query | str,
    store: Store,
    strict: bool = True,
) -> TurnCursor:
    """`begin_turn` on arguments already checked (the runner's later turns, whose states
    the planner built). The ledger ranges of a state the planner did not build are checked
    on its integer counts; the planner's own states keep them by construction (C5)."""
    if isinstance(query, str):
        query = interface.query(query)
    if strict:
        require_contract(interface)
    vector = state.vector(interface.ledger_scale)
    if not state.built_by_planner:
        require_ledger_ranges(interface, vector, "state.ledgers", strict)
    caches = caches_of(interface)
    slots = caches.active_slots(query, state.history, store)  # lines 1-2: G_t
    return TurnCursor(TurnFrame(interface, store, query, state.history, state.turn, slots, strict, caches), vector)
