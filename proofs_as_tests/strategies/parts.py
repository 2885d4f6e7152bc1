"""The parts of a generated DP-MemView deployment for the proof suite: the small exact
values and names the generators share, the table scorer over discrete memory levels (with
its exact sensitivity, Eq. 6), a public history router (C4), observable controls (C6), the
LLM channel of Eq. (2) and the adaptive query strategies. `core` draws cases from them.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction

import attrs

from dpmem_ref import (
    ControlContext,
    MemoryItem,
    Policy,
    PublicPrefix,
    Query,
    SlotRead,
    TurnRecord,
    Vocabulary,
)
from dpmem_ref.parts.protocols import PrivateTurnData

# Small exact values keep shrunk cases readable and the exact engine fast.
CAPS = (Fraction(1, 2), Fraction(2, 3), Fraction(1), Fraction(3, 2), Fraction(2), Fraction(3))
TABLE_VALUES = tuple(Fraction(k, 4) for k in range(5))
EPSILONS = (Fraction(1, 10), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(1), Fraction(3, 2), Fraction(2))

# Public transcript of one turn: (query name, released views, control, response).
PublicTurn = tuple[str, tuple[tuple[str, str], ...], Hashable, str]


def slot_name(k: int) -> str:
    return f"g{k}"


def view_name(slot: str, k: int) -> str:
    return f"{slot}.gen" if k == 0 else f"{slot}.v{k}"


def fell_back(turn: PublicTurn) -> bool:
    """Whether a released turn publicly shows a fallback: the fallback control says so,
    the budget-status control shows an exhausted ledger, or (no such control) the turn
    released only generic views. Public transcript only (what the adversary sees)."""
    _query, views, control, _response = turn
    if isinstance(control, tuple) and control:
        if any(isinstance(entry, tuple) and len(entry) == 2 and entry[1] == "fallback" for entry in control):
            return True
        if all(isinstance(entry, tuple) and len(entry) == 2 and entry[1] in ("released", "fallback") for entry in control):
            return False
        if any(isinstance(entry, tuple) and len(entry) == 2 and entry[1] == "0" for entry in control):
            return True
        return False
    return bool(views) and all(view.endswith(".gen") for _, view in views)


# ---------------------------------------------------------------------------------------
# Scorers


def level_item(position: int, level: int) -> MemoryItem:
    """The content of a position in a table-scored store: a discrete level."""
    return MemoryItem(tags=frozenset({f"p{position}", f"l{level}"}), text=f"p{position}=l{level}")


def item_level(item: MemoryItem) -> tuple[int, int]:
    position = level = -1
    for tag in item.tags:
        if tag.startswith("p"):
            position = int(tag[1:])
        elif tag.startswith("l"):
            level = int(tag[1:])
    return position, level


@attrs.frozen
class TableScorer:
    """u(v; M_R) = mean over read positions i of table[i][v][level_i]: always in [0, 1].

    `sensitivities` is the declared Delta per slot (Eq. 6); `tight` marks whether it is
    the exact sup (see `exact_table_sensitivity`) or a loose valid bound.
    """

    table: tuple[tuple[int, tuple[tuple[str, tuple[Fraction, ...]], ...]], ...]
    sensitivities: tuple[tuple[str, Fraction], ...]
    tight: bool = True

    def row(self, position: int) -> dict[str, tuple[Fraction, ...]]:
        return dict(dict(self.table)[position])

    def scores(
        self, relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[MemoryItem, ...]
    ) -> tuple[Fraction, ...]:
        table = dict(self.table)
        result = []
        for view in vocabulary.views:
            total = Fraction(0)
            for item in items:
                position, level = item_level(item)
                total += dict(table[position])[view.name][level]
            result.append(total / len(items) if items else Fraction(0))
        return tuple(result)

    def sensitivity(self, vocabulary: Vocabulary) -> Fraction:
        return dict(self.sensitivities)[vocabulary.slot]

    def exact_sensitivity(self, vocabulary: Vocabulary) -> Fraction | None:
        return None  # the declared bound; exact_table_sensitivity proves it in the tests


def exact_table_sensitivity(
    table: Mapping[int, Mapping[str, tuple[Fraction, ...]]],
    policy: Policy,
    queries: Sequence[Query],
    vocabulary: Vocabulary,
    reads_subsets: bool = False,
) -> Fraction:
    """sup over a in Gamma, M ~_a M' of ||u(M) - u(M')||_inf for every read of the slot.

    The score is additive over read positions, so the sup changes every position of
    R & I_a from its minimising to its maximising level: sum of ranges / |R|. With
    `reads_subsets`, also every prefix-narrowed read the history router may issue.
    """
    best = Fraction(0)
    for query in queries:
        for read in query.reads:
            if read.slot != vocabulary.slot:
                continue
            read_sets = [read.positions]
            if reads_subsets:
                read_sets.append(frozenset({min(read.positions)}))
            for positions in read_sets:
                for attribute in policy.attributes:
                    touched = positions & attribute.group
                    if not touched:
                        continue
                    for view in vocabulary.names:
                        spread = sum(
                            (max(table[i][view]) - min(table[i][view]) for i in touched), Fraction(0)
                        ) / len(positions)
                        best = max(best, spread)
    return best


# ---------------------------------------------------------------------------------------
# Routers, controls, channels and strategies (all public: C4, C6, Eq. 2)


@attrs.frozen
class HistoryRouter:
    """A public adaptive router (C4): reads only the released history and this turn's
    released views. If the previous turn released a non-generic view in the query's
    first slot, the slots run in reverse order; a slot whose predecessor in this turn
    released its generic view reads only the first position of its read set."""

    generics: tuple[str, ...]
    reads_history: bool = True
    reads_released_views: bool = True

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        slots = tuple(read.slot for read in query.reads)
        if history and len(slots) > 1:
            last = dict(history[-1].views)
            first = slots[0]
            if first in last and last[first] not in self.generics:
                return tuple(reversed(slots))
        return slots

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        read = prefix.query.read_for(slot)
        if prefix.released and prefix.released[-1][1] in self.generics:
            return attrs.evolve(read, positions=frozenset({min(read.positions)}))
        return read

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        return history[-1].views if history else None


@attrs.frozen
class BudgetStatusControl:
    """c_t = remaining budget B_a - L_a of every attribute: ledger state only (C6)."""

    name: str = "budget-status"
    violates: str | None = None
    reads_private: bool = False
    reads_views: bool = False
    reads_history: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        caps = dict(context.caps)
        return tuple((a, str(caps[a] - value)) for a, value in context.ledgers)


@attrs.frozen
class ViewCountControl:
    """c_t = how many released views this turn are non-generic: released views only (C6)."""

    generics: tuple[str, ...]
    name: str = "view-count"
    violates: str | None = None
    reads_private: bool = False
    reads_views: bool = True
    reads_history: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        return sum(1 for _, view in context.views if view not in self.generics)


def stable_hash(value: object) -> int:
    """A hash that does not depend on PYTHONHASHSEED (strategies must be reproducible)."""
    return zlib.crc32(repr(value).encode())


@attrs.frozen
class Channel:
    """An LLM channel K(y | q, v, tau_<t) (Eq. 2): sees public inputs only.

    kind "echo": deterministic, restates whether each slot got a non-generic view;
    kind "noisy": reveals that bit with probability 1 - flip, its negation otherwise;
    kind "constant": always the same answer (views fully hidden from the application).
    `distribution` is the exact law (used by the exact engine), `respond` samples it
    with its own seeded generator (used by run_turn).
    """

    kind: str
    flip: Fraction = Fraction(0)
    seed: int = 0
    _rng: list[random.Random] = attrs.field(factory=list, eq=False, repr=False, hash=False, init=False)

    def distribution(
        self, query: str, views: tuple[tuple[str, str], ...], prefix: tuple[tuple[str, Hashable, str], ...]
    ) -> tuple[tuple[str, Fraction], ...]:
        if self.kind == "constant":
            return (("ok", Fraction(1)),)
        signal = "".join("0" if text.endswith(".gen") else "1" for _, text in views)
        if self.kind == "echo":
            return ((f"y:{signal}", Fraction(1)),)
        other = "".join("1" if c == "0" else "0" for c in signal)
        if self.flip == 0 or other == signal:
            return ((f"y:{signal}", Fraction(1)),)
        return ((f"y:{signal}", 1 - self.flip), (f"y:{other}", self.flip))

    def respond(
        self, query: str, views: tuple[tuple[str, str], ...], prefix: tuple[tuple[str, Hashable, str], ...]
    ) -> str:
        if not self._rng:
            self._rng.append(random.Random(self.seed))
        outcomes = self.distribution(query, views, prefix)
        draw = Fraction(self._rng[0].randrange(10**6), 10**6)
        for response, probability in outcomes:
            if draw < probability:
                return response
            draw -= probability
        return outcomes[-1][0]


@attrs.frozen
class QueryStrategy:
    """An adaptive query strategy: a law over query names given the public transcript.

    kind "fixed": plays `sequence` (cyclically), ignoring what was released;
    kind "react": deterministic; the next query is `choices[s % len(choices)]` where s
    is a signal of the last released turn (`signal`: "views", "control" or "response");
    kind "mixed": randomized; the signal selects a weight row over the choices;
    kind "pivot": deterministic and reacting to fallbacks: plays `choices[k]` where k is
    the number of turns so far that showed a fallback (`fell_back`), so the adversary
    moves to its next query each time the current one stops being answered.
    The augmented adversary may read views ("views"); the ordinary one reads c and y.
    """

    kind: str
    sequence: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    signal: str = "views"
    weights: tuple[tuple[int, ...], ...] = ()

    def _signal(self, history: Sequence[PublicTurn]) -> int:
        if not history:
            return 0
        query, views, control, response = history[-1]
        if self.signal == "views":
            return sum(1 for _, view in views if not view.endswith(".gen"))
        if self.signal == "control":
            return stable_hash(control)
        return stable_hash(response)

    def distribution(self, history: Sequence[PublicTurn]) -> tuple[tuple[str, Fraction], ...]:
        if self.kind == "fixed":
            return ((self.sequence[len(history) % len(self.sequence)], Fraction(1)),)
        if self.kind == "pivot":
            pivots = sum(1 for turn in history if fell_back(turn))
            return ((self.choices[pivots % len(self.choices)], Fraction(1)),)
        s = self._signal(history)
        if self.kind == "react":
            return ((self.choices[(s + len(history)) % len(self.choices)], Fraction(1)),)
        row = self.weights[s % len(self.weights)]
        total = sum(row)
        merged: dict[str, Fraction] = {}
        for name, weight in zip(self.choices, row, strict=True):
            if weight:
                merged[name] = merged.get(name, Fraction(0)) + Fraction(weight, total)
        return tuple(merged.items())

    def choose(self, history: Sequence[PublicTurn], rng: random.Random) -> str:
        outcomes = self.distribution(history)
        draw = Fraction(rng.randrange(10**6), 10**6)
        for name, probability in outcomes:
            if draw < probability:
                return name
            draw -= probability
        return outcomes[-1][0]


