"""Single transcripts: the exact replay of a given transcript under one store, the naive
enumeration of every transcript (the reference the searches are checked against), and
the witness of a chosen query sequence under both stores. All drive the kernel's turn
planner (`begin_turn`), as the sampler does."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs
import mpmath

from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.analysis.steps import StepTable
from dpmem_ref.analysis.witness import Node, TurnEnd, ViewNode, WitnessTurn
from dpmem_ref.core.ledgers import Ledgers
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.em import DEFAULT_DPS
from dpmem_ref.turn.planner import TurnCursor, begin_turn
from dpmem_ref.turn.state import InterfaceState


@attrs.frozen
class Replay:
    """A transcript replayed under one store: its exact log probability (views and
    controls; queries and responses cancel) and the pathwise ledgers L_a(omega)."""

    log_probability: mpmath.mpf
    ledgers: Ledgers
    turn_ledgers: tuple[Ledgers, ...]


def replay_transcript(
    interface: Interface,
    store: Store,
    turns: Sequence[TurnRecord | WitnessTurn],
    control_side: LossDirection | str = LossDirection.A_OVER_B,
    strict: bool = True,
) -> Replay:
    """log Pr[views and controls of `turns` | store, queries], from the same plans the
    sampler uses. -inf if the store cannot produce the transcript. strict as in
    `worst_case_loss`. A witness's turns are replayed expecting the controls of the
    numerator of `control_side` (a `LossDirection`, or its short side "a" / "b")."""
    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        return _replay(interface, store, turns, LossDirection.of(control_side), strict)


def _replay(
    interface: Interface,
    store: Store,
    turns: Sequence[TurnRecord | WitnessTurn],
    control_side: LossDirection,
    strict: bool,
) -> Replay:
    state = InterfaceState.initial(interface)
    total = mpmath.mpf(0)
    per_turn: list[Ledgers] = []
    for turn in turns:
        cursor = begin_turn(interface, state, interface.query(turn.query), store, strict=strict)
        if isinstance(turn, TurnRecord):
            expected, recorded, response = turn.control, turn.control, turn.response
        else:
            expected = control_side.numerator(turn.control_a, turn.control_b)
            recorded, response = turn.control_a, ""
        for slot, view in turn.views:
            if cursor.done or cursor.plan().slot != slot:
                break  # this store activates other slots: not its transcript
            total += cursor.plan().distribution.log_probability(view)
            cursor = cursor.release(view)
        if not cursor.done or len(cursor.released) != len(turn.views) or cursor.control() != expected:
            # Not a transcript of this store from here on; its ledgers stop here.
            per_turn += [cursor.ledgers] * (len(turns) - len(per_turn))
            return Replay(log_probability=mpmath.mpf("-inf"), ledgers=cursor.ledgers, turn_ledgers=tuple(per_turn))
        per_turn.append(cursor.ledgers)
        state, _ = cursor.finish(response=response, control=recorded)
    return Replay(log_probability=total, ledgers=state.ledgers, turn_ledgers=tuple(per_turn))


def enumerate_transcripts(
    interface: Interface,
    store: Store,
    horizon: int,
    queries: Sequence[Query] | None = None,
    strict: bool = True,
) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
    """Every (query sequence, release sequence) with positive probability under `store`,
    with its exact log probability: the naive reference the memoized engine is checked
    against (exponential in the horizon; for small slices only). strict as in
    `worst_case_loss`."""
    catalogue = tuple(queries if queries is not None else interface.queries)

    def turns(state: InterfaceState, logp: mpmath.mpf) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
        if state.turn == horizon:
            yield state.history, logp
            return
        for query in catalogue:
            yield from releases(begin_turn(interface, state, query, store, strict=strict), logp)

    def releases(cursor: TurnCursor, logp: mpmath.mpf) -> Iterator[tuple[tuple[TurnRecord, ...], mpmath.mpf]]:
        if cursor.done:
            state, _ = cursor.finish()
            yield from turns(state, logp)
            return
        distribution = cursor.plan().distribution
        for view in distribution.support():
            yield from releases(cursor.release(view), logp + distribution.log_probability(view))

    with mpmath.workdps(max(mpmath.mp.dps, DEFAULT_DPS)):
        yield from turns(InterfaceState.initial(interface), mpmath.mpf(0))


def witness_chain(
    interface: Interface,
    store_a: Store,
    store_b: Store,
    queries: Sequence[Query],
    direction: LossDirection,
    steps: StepTable,
    strict: bool,
) -> Node:
    """The witness of a query sequence: each slot releases the view with the largest step
    in `direction`, both stores walked from the same public history; a
    turn whose controls differ ends it (the transcript is impossible under one store)."""
    state_a = state_b = InterfaceState.initial(interface)
    turns: list[tuple[str, tuple[tuple[str, str], ...], object, object, str]] = []
    for query in queries:
        cursor_a = begin_turn(interface, state_a, query, store_a, strict=strict)
        cursor_b = begin_turn(interface, state_b, query, store_b, strict=strict)
        while not cursor_a.done:
            view = steps.best(cursor_a.plan(), cursor_b.plan()).at(direction)
            cursor_a, cursor_b = cursor_a.release(view), cursor_b.release(view)
        control_a, control_b = cursor_a.control(), cursor_b.control()
        if control_a != control_b:
            turns.append((query.name, cursor_a.released, control_a, control_b, "control differs"))
            break
        turns.append((query.name, cursor_a.released, control_a, control_b, ""))
        state_a, _ = cursor_a.finish(control=control_a)
        state_b = InterfaceState(turn=state_a.turn, ledgers=cursor_b.ledgers, history=state_a.history)
    node: Node = None
    for name, views, control_a, control_b, note in reversed(turns):
        node = TurnEnd(name, control_a, control_b, note, node)
        for slot, view in reversed(views):
            node = ViewNode(slot, view, node)
    return node
