"""The engine's results: the worst case in each direction with the transcript attaining it.

A witness is built while searching as a chain of nodes shared between memoized states
(`ViewNode` for one slot's release, `TurnEnd` closing a turn), and flattened into
`WitnessTurn`s for the caller.
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction

import attrs
import mpmath

from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.analysis.loss import IV_DPS, Loss


@attrs.frozen
class WitnessTurn:
    """One turn of a witness transcript: the query, released views, and the control
    under each store (equal unless a memory-dependent control tells them apart)."""

    query: str
    views: tuple[tuple[str, str], ...]
    control_a: Hashable
    control_b: Hashable
    note: str = ""


@attrs.frozen
class TurnEnd:
    """The end of a turn in a witness chain; `rest` is the chain of the next turns."""

    query: str
    control_a: Hashable
    control_b: Hashable
    note: str
    rest: Node


@attrs.frozen
class ViewNode:
    """One slot's release in a witness chain, followed by the rest of the turn."""

    slot: str
    view: str
    rest: Node


Node = TurnEnd | ViewNode | None


def flatten(node: Node) -> tuple[WitnessTurn, ...]:
    turns = []
    views: list[tuple[str, str]] = []
    while node is not None:
        if isinstance(node, ViewNode):
            views.append((node.slot, node.view))
        else:
            turns.append(WitnessTurn(node.query, tuple(views), node.control_a, node.control_b, node.note))
            views = []
        node = node.rest
    return tuple(turns)


@attrs.frozen
class Direction:
    """sup over transcripts of log Pr[w | A] / Pr[w | B], with the attaining transcript."""

    value: Loss
    witness: tuple[WitnessTurn, ...]

    @property
    def is_infinite(self) -> bool:
        return self.value.is_infinite

    @property
    def upper(self) -> mpmath.mpf:
        return self.value.upper

    @property
    def lower(self) -> mpmath.mpf:
        return self.value.lower

    @property
    def midpoint(self) -> mpmath.mpf:
        return self.value.midpoint


@attrs.frozen
class WorstCase:
    """Exact worst-case privacy loss over all adaptive strategies of length `horizon`.

    `states_explored` counts the search's memoized values (see the search modules);
    `states_built` the states counted against `--max-states` (`analysis.bounds`);
    `fixed_point` is the r at which the ledger programme's value iteration stopped early
    (V_r = V_{r-1} at every state within depth T - r): the loss at this horizon T equals
    the loss at horizon r. It claims nothing about horizons beyond T (the state graph is
    built to depth T - 1 only). None when the search ran every turn. `dps`: the decimal
    digits of the log-probability enclosures."""

    a_over_b: Direction
    b_over_a: Direction
    horizon: int
    states_explored: int
    seconds: float
    fixed_point: int | None = None
    dps: int = IV_DPS
    states_built: int = 0

    @property
    def worst(self) -> Direction:
        return self.b_over_a if self.b_over_a.value.ranks_above(self.a_over_b.value) else self.a_over_b

    @property
    def direction(self) -> LossDirection:
        """The direction of `worst` (A over B on ties)."""
        return LossDirection.A_OVER_B if self.worst is self.a_over_b else LossDirection.B_OVER_A

    def along(self, direction: LossDirection) -> Direction:
        """The worst case in `direction`."""
        return direction.pick(self.a_over_b, self.b_over_a)

    def holds(self, bound: Fraction | None) -> bool:
        """Certified: the upper end is <= the bound, compared exactly (None = no finite bound)."""
        if bound is None:
            return not self.worst.is_infinite
        return self.worst.value.within(bound)
