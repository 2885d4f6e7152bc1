"""The general memoized search over adaptive strategies (any router, control or hook).

V(t, ledgers, router state[, released views]) = max over queries and released views of
the step log ratios plus the future, both directions, walking each store's turn with the
kernel's turn planner (`begin_turn`, one cursor per store). A transcript that one store
cannot produce (its slots or its control differ) is infinite. Used whenever the ledger
programme (`dpmem_ref.analysis.ledger`) does not apply: routing or controls that read the
history, the released views or the store, and deliberate private hooks.

Depth-safe: the recursion V(t) -> V(t + 1) runs on an explicit stack (`_drive`): each
value is a generator that yields the sub-values it needs and is resumed with them, in the
order the recursive search evaluated them (the same memo, the same witness), so no horizon
reaches Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Generator, Hashable
from typing import Any

from dpmem_ref.analysis.bounds import state_limit
from dpmem_ref.analysis.direction import Best
from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, ZERO
from dpmem_ref.analysis.steps import SearchProblem, StepTable
from dpmem_ref.analysis.witness import Node, TurnEnd, ViewNode
from dpmem_ref.core.transcript import Query
from dpmem_ref.turn.planner import TurnCursor, begin_turn
from dpmem_ref.turn.state import InterfaceState

# A sub-search's worst case is a Best[Node]: both directions, with the witness chains.
NOTHING: Best[Node] = Best(IMPOSSIBLE, None, IMPOSSIBLE, None)
# A value being computed: yields the sub-values it needs (generators), receives each one's
# Best[Node], returns its own.
Pending = Generator[Any, Best[Node], Best[Node]]


def _drive(root: Pending) -> Best[Node]:
    """Run a pending value and every sub-value it asks for on an explicit stack."""
    stack = [root]
    value: Best[Node] | None = None
    while True:
        try:
            request = stack[-1].send(value)  # type: ignore[arg-type]
        except StopIteration as done:
            stack.pop()
            value = done.value
            if not stack:
                return value
            continue
        stack.append(request)
        value = None


class GeneralSearch(SearchProblem):
    def setup(self) -> None:
        self.steps = StepTable()
        self.turn_memo: dict[Hashable, Best[Node]] = {}
        self.slot_memo: dict[Hashable, Best[Node]] = {}
        # The rest of a turn and the future are independent of which view a slot released
        # when neither routing nor the control reads released views (declared on the parts).
        router = self.interface.router
        # Reuse re-serves released views in later turns: the future depends on them.
        self.views_irrelevant = (
            not router.reads_released_views and not self.interface.control.reads_views and not self.interface.reuse.rules
        )
        self.deepest = 0  # the latest turn a node was built at (for the refusal's advice)
        self.opened = 0  # nodes opened: memoized once their sub-nodes are done

    @property
    def states_explored(self) -> int:
        """(turn, ledgers, router key) nodes plus (turn, query, slot, ledgers, ...) nodes."""
        return len(self.turn_memo) + len(self.slot_memo)

    def _room(self) -> None:
        # Counted when a node opens (it is memoized when it closes, after its sub-nodes).
        if self.opened >= self.max_states:
            raise state_limit(
                self.max_states,
                f"more than {self.max_states} search nodes",
                f"raise it, or lower --horizon (nodes were built up to turn {self.deepest + 1} of {self.horizon};"
                " each turn fewer drops that turn's nodes)",
            )
        self.opened += 1

    def run(self) -> Best[Node]:
        start = InterfaceState.initial(self.interface)
        return _drive(self.turn_value(start, start))

    def turn_value(self, state_a: InterfaceState, state_b: InterfaceState) -> Pending:
        t = state_a.turn
        if t == self.horizon:
            return Best(ZERO, None, ZERO, None)
        key = (t, state_a.ledgers, state_b.ledgers, self.interface.state_key(state_a.history))
        cached = self.turn_memo.get(key)
        if cached is not None:
            return cached
        self._room()
        self.deepest = max(self.deepest, t)
        best = NOTHING
        for query in self.queries:
            cursor_a = begin_turn(self.interface, state_a, query, self.store_a, strict=self.strict)
            cursor_b = begin_turn(self.interface, state_b, query, self.store_b, strict=self.strict)
            best = best.combine((yield self.slot_value(cursor_a, cursor_b)))
        self.turn_memo[key] = best
        return best

    def slot_value(self, cursor_a: TurnCursor, cursor_b: TurnCursor) -> Pending:
        query = cursor_a.query
        if cursor_a.done or cursor_b.done:
            if cursor_a.done != cursor_b.done:
                return _one_sided(query, "active slots differ")
            return (yield self.turn_end(cursor_a, cursor_b))
        plan_a, plan_b = cursor_a.plan(), cursor_b.plan()
        if plan_a.slot != plan_b.slot:
            return _one_sided(query, "active slots differ")
        released = cursor_a.released
        key = (
            cursor_a.turn,
            query.name,
            len(released),
            (cursor_a.units, cursor_a.scale),
            (cursor_b.units, cursor_b.scale),
            self.interface.state_key(cursor_a.history),
            None if self.views_irrelevant else released,
            tuple(p.admitted for p in cursor_a.plans),
            tuple(p.admitted for p in cursor_b.plans),
        )
        cached = self.slot_memo.get(key)
        if cached is not None:
            return cached
        self._room()
        steps = self.steps.steps(plan_a, plan_b)
        slot = plan_a.slot
        best = NOTHING
        # When neither routing nor the control reads released views, one continuation
        # serves every outcome: the best step, then the rest.
        shared = None
        if self.views_irrelevant:
            view = steps[0][0] if steps else plan_a.vocabulary.generic
            shared = yield self.slot_value(cursor_a.release(view), cursor_b.release(view))
        for view, ab, ba in steps:
            rest = shared if shared is not None else (yield self.slot_value(cursor_a.release(view), cursor_b.release(view)))
            node_ab, node_ba = ViewNode(slot, view, rest.ab_at), ViewNode(slot, view, rest.ba_at)
            best = best.combine(Best(ab.add(rest.ab), node_ab, ba.add(rest.ba), node_ba))
        self.slot_memo[key] = best
        return best

    def turn_end(self, cursor_a: TurnCursor, cursor_b: TurnCursor) -> Pending:
        control_a, control_b = cursor_a.control(), cursor_b.control()
        query = cursor_a.query.name
        if control_a != control_b:
            node = TurnEnd(query, control_a, control_b, "control differs", None)
            return Best(INFINITE, node, INFINITE, node)
        state_a, _ = cursor_a.finish(control=control_a)
        # Both sides continue from the one public history (the released transcript).
        state_b = InterfaceState(turn=state_a.turn, ledgers=cursor_b.ledgers, history=state_a.history)
        future = yield self.turn_value(state_a, state_b)
        return Best(
            future.ab,
            TurnEnd(query, control_a, control_b, "", future.ab_at),
            future.ba,
            TurnEnd(query, control_a, control_b, "", future.ba_at),
        )


def _one_sided(query: Query, note: str) -> Best[Node]:
    node = TurnEnd(query.name, None, None, note, None)
    return Best(INFINITE, node, INFINITE, node)
