"""Algorithm 1 run turn by turn: drive the turn planner, sampling each release."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from dpmem_ref.channel.protocol import LLMChannel
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.randomness import RandomSource
from dpmem_ref.turn.channel import respond
from dpmem_ref.turn.checks import (
    require_channel,
    require_interface,
    require_queries,
    require_query,
    require_source,
    require_state,
    require_store,
    require_strict,
)
from dpmem_ref.turn.plan import SlotPlan
from dpmem_ref.turn.planner import TurnCursor, open_turn
from dpmem_ref.turn.record import release_kinds
from dpmem_ref.turn.state import InterfaceState


@attrs.frozen
class TurnResult:
    state: InterfaceState
    record: TurnRecord
    plans: tuple[SlotPlan, ...] = attrs.field(repr=False)

    @property
    def kinds(self) -> tuple[tuple[str, str], ...]:
        """Per slot: "fresh" (charged), "reused" (a released view, free) or "fallback"."""
        return release_kinds(self.plans)


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
    Arguments are checked at this boundary (InputError; dpmem_ref.turn.checks).
    """
    interface = require_interface(interface)
    require_store(interface, store)
    require_state(interface, state, records=True)  # begin_turn's checks, and the records the channel reads
    require_source(source)
    require_channel(channel)
    cursor = open_turn(interface, state, require_query(query), store, require_strict(strict))
    return _sample_turn(interface, cursor, source, channel)


def _sample_turn(
    interface: Interface, cursor: TurnCursor, source: RandomSource, channel: LLMChannel | None
) -> TurnResult:
    cursor = cursor.release_sampled(source)
    response = "" if channel is None else respond(channel, interface, cursor.query, cursor.released, cursor.history)
    new_state, record = cursor.finish(response)
    return TurnResult(state=new_state, record=record, plans=cursor.plans)


def run_interaction(
    interface: Interface,
    queries: Sequence[Query | str],
    store: Store,
    source: RandomSource,
    channel: LLMChannel | None = None,
    strict: bool = True,
) -> InterfaceState:
    """Run a fixed query sequence from the initial state (arguments checked once, here;
    every later state is the planner's own)."""
    interface = require_interface(interface)
    require_store(interface, store)
    require_source(source)
    require_channel(channel)
    strict = require_strict(strict)
    state = InterfaceState.initial(interface)
    for query in require_queries(queries):
        state = _sample_turn(interface, open_turn(interface, state, query, store, strict), source, channel).state
    return state
