"""The frontier programme: the lattice programme's integer programme (`analysis.lattice`)
solved class by class, keeping only the ledgers still shared with the classes to come,
with the turns used as Pareto lists where the horizon binds.

Where the lattice's (i)-(iii) hold (`lattice.shape`), V_T is the largest exact loss of a
multiset of admissions: with n_k the admissions of class k (move vector v_k in digits,
step S_k, the largest of its members'), x(n) = sum_k n_k v_k,

    V_T = max { sum_k n_k S_k : n >= 0 integer, x(n) <= top, sum_k n_k <= T }.

(Ledgers only grow, so x(n) <= top makes every admission of every order of n admitted;
each admitted step is the same at every state; refused moves and the pass are step-0
self-loops that pad a strategy to exactly T turns: the lattice's derivation, which also
shows why the last constraint is all the horizon adds.) The lattice drops the last
constraint where (iv) shows it never binds, and values every cell of the box. Here the
classes are taken one at a time in an elimination order (greedy: the smallest table
next). After class j the table maps the used digits of the *active* ledgers (those a
class before and a class after j both charge), and the turns used where the horizon
binds, to the largest sum over the classes so far; a ledger whose last class is done is
checked and dropped. That is exact variable elimination for a separable objective under
per-ledger knapsack constraints: the classes to come see the past only through the
active ledgers and the turns. Each key is valued once per class (best[y] = max(base[y],
best[y - v] + H), in lexicographic order), so a chain of coupled ledgers costs a few
entries per class where the lattice's box has (B/g + 1)^A cells. Where the unconstrained
optimum needs more than T admissions, each key holds the Pareto list of (turns used,
value) instead of one value (at most T + 1 pairs, usually a few), not a value iteration
over every state.

Exactness is the lattice's: every step's enclosure has dyadic ends, every end is an
integer in units of 2^-p, the table holds exact integers (Python ints), U = max sum n_k H_k
(H_k the largest upper end of class k) >= V_T exactly, the maximising n* is recovered
through back pointers (the first maximum in table order), and L = sum n*_k lo_k is the
lower end of a real strategy's exact loss (n* played with the member of each class with
the largest upper end, then the pass), so [L, U] encloses V_T. The witness plays n* class
by class, then the pass up to T, replayed with real cursors over both stores.

The table entries are the states counted against `--max-states` (`analysis.bounds`): the
programme stops at the first entry past the limit (`FrontierFull`), and the sparse
programme runs instead under the same limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from math import prod
from typing import TYPE_CHECKING

from dpmem_ref.analysis.direction import Best, LossDirection
from dpmem_ref.analysis.lattice import Shape, _power, _scaled
from dpmem_ref.analysis.loss import ZERO, Loss
from dpmem_ref.analysis.replay import witness_chain
from dpmem_ref.analysis.witness import Node

if TYPE_CHECKING:
    from dpmem_ref.analysis.ledger import LedgerSearch

FRONTIER_MAX_WORK = 20_000_000  # the most widened table keys (a bound) the frontier programme plans for


class FrontierFull(Exception):
    """The frontier programme passed `--max-states`: the sparse programme runs instead."""


class Step:
    """One class in the elimination order and the table layout around it."""

    __slots__ = ("at", "cls", "keep", "tops")

    def __init__(self, cls: int, at: tuple[tuple[int, int], ...], tops: tuple[int, ...], keep: tuple[int, ...]) -> None:
        self.cls = cls  # the class's index in the shape
        self.at = at  # (position in the widened key, digits per admission) for each ledger it moves
        self.tops = tops  # the top digit of each position of the widened key
        self.keep = keep  # positions of the widened key kept after this class


class Order:
    """An elimination order and the table layout around each class, and its work bound."""

    __slots__ = ("steps", "work")

    def __init__(self, steps: list[tuple[tuple[int, ...], Step]], work: int) -> None:
        self.steps, self.work = steps, work


class Plan:
    """The elimination order (the turns are not a ledger of it: where they bind they are
    carried as Pareto lists, `_maximise_within`)."""

    __slots__ = ("free", "work")

    def __init__(self, free: Order) -> None:
        self.free, self.work = free, free.work


def plan(found: Shape, horizon: int) -> Plan | None:
    """The frontier programme for `found`, or None if some class moves no kept ledger or
    the order's work bound passes FRONTIER_MAX_WORK. (`horizon`: where it can bind, the
    work may grow by up to a factor T + 1 in the Pareto lists.)"""
    del horizon
    classes = found.classes
    if not classes or any(k.weight == 0 for k in classes):
        return None
    free = _order(found)
    return None if free is None else Plan(free)


def _order(found: Shape) -> Order | None:
    """An elimination order (greedy: the class whose widened table is smallest next, then
    the one retiring most ledgers, then the first)."""
    classes = found.classes
    tops: dict[int, int] = {i: level - 1 for i, level in enumerate(found.levels)}
    moves = [{i: w for i, w in enumerate(k.step) if w} for k in classes]
    left = set(range(len(classes)))
    active: list[int] = []
    steps: list[tuple[tuple[int, ...], Step]] = []
    work = 0

    def cost(c: int, active: list[int]) -> tuple[int, int, int]:
        widened = set(active) | set(moves[c])
        retired = [i for i in widened if not any(i in moves[d] for d in left if d != c)]
        return prod(tops[i] + 1 for i in widened), -len(retired), c

    while left:
        c = min(left, key=lambda d: cost(d, active))
        left.discard(c)
        before = tuple(active)
        widened = list(active) + [i for i in sorted(moves[c]) if i not in active]
        position = {i: p for p, i in enumerate(widened)}
        after = tuple(i for i in widened if any(i in moves[d] for d in left))
        work += prod(tops[i] + 1 for i in widened)  # the widened keys, each valued once
        if work > FRONTIER_MAX_WORK:
            return None
        at = tuple((position[i], w) for i, w in sorted(moves[c].items()))
        keep = tuple(position[i] for i in after)
        steps.append((before, Step(c, at, tuple(tops[i] for i in widened), keep)))
        active = list(after)
    return Order(steps, work)


def solve(search: LedgerSearch, found: Shape, frontier: Plan) -> Best[Node]:
    """The worst case both ways with witnesses (module docstring), filling the search's
    bookkeeping as the lattice does; FrontierFull past `search.max_states` entries.

    Each direction first runs without the turns: where its maximising n* has sum n* <= T
    (always, unless the horizon can bind), n* is feasible under the turns too and attains
    the same maximum U over the smaller set, so it is the answer; else the same order runs
    with the turns (`_maximise_within`)."""
    classes = found.classes
    p = _power([loss for k in classes for _, ab, ba in k.members for loss in (ab, ba)])
    results: list[tuple[Loss, Node]] = []
    built: dict[int, int] = {}  # per order run (its tables are the same both ways): entries
    for direction in LossDirection:
        his: list[int] = []
        los: list[int] = []
        picks: list[int] = []
        for k in classes:
            scaled = [(q, *_scaled(direction.pick(ab, ba), p)) for q, ab, ba in k.members]
            hi = max(end for _, _, end in scaled)
            pick, lo, _ = next(member for member in scaled if member[2] == hi)  # first with the largest upper end
            his.append(hi)
            los.append(lo)
            picks.append(pick)
        high, counts = _maximise(frontier.free, his, len(classes), _room(search, built, 0), built, 0)
        if sum(counts) > search.horizon:
            high, counts = _maximise_within(
                frontier.free, his, len(classes), _room(search, built, 1), built, 1, search.horizon
            )
        low = sum(n * lo for n, lo in zip(counts, los, strict=True))
        loss = ZERO if high == 0 else Loss.of_fractions(Fraction(low, 1 << p), Fraction(high, 1 << p))
        chosen = [q for c, n in enumerate(counts) for q in [picks[c]] * n]
        queries = [search.queries[q] for q in chosen]
        queries += [search.queries[found.pass_query]] * (search.horizon - len(queries))
        node = witness_chain(
            search.interface, search.store_a, search.store_b, queries, direction, search.steps, search.strict
        )
        results.append((loss, node))
    search.state_count = sum(built.values())
    search.iterations, search.longest, search.fixed_point = 1, True, None
    (ab, ab_node), (ba, ba_node) = results
    search.start_values = [(ZERO, ZERO), (ab, ba)]
    search.choices, search.states, search.index = [], [], {}
    return Best(ab, ab_node, ba, ba_node)


def _room(search: LedgerSearch, built: dict[int, int], name: int) -> int:
    """The entries order `name` may build: the limit less the other orders' entries."""
    return search.max_states - sum(entries for order, entries in built.items() if order != name)


def _maximise(
    order: Order, his: list[int], count: int, limit: int, built: dict[int, int], name: int
) -> tuple[int, list[int]]:
    """max sum_k n_k H_k over the order's constraints, and the first maximising n (table
    order); its widened keys are recorded in built[name] (FrontierFull past `limit`)."""
    table: dict[tuple[int, ...], int] = {(): 0}
    back: list[dict[tuple[int, ...], tuple[tuple[int, ...], int]]] = []
    entries = 0
    for before, step in order.steps:
        width = len(before)
        grow = len(step.tops) - width
        hi = his[step.cls]
        base = {key + (0,) * grow: value for key, value in table.items()}
        keys = _widened_keys(base, step)
        entries += len(keys)
        if entries > limit:
            raise FrontierFull
        # best[y] = max(base[y], best[y - v] + H): lexicographic order puts y - v first.
        best: dict[tuple[int, ...], int] = {}
        runs: dict[tuple[int, ...], int] = {}
        for key in sorted(keys):
            start = base.get(key)
            earlier = _retreat(key, step)
            if earlier is not None and earlier in best and (start is None or best[earlier] + hi > start):
                best[key], runs[key] = best[earlier] + hi, runs[earlier] + 1
            elif start is not None:
                best[key], runs[key] = start, 0
        new: dict[tuple[int, ...], int] = {}
        pointers: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}
        for y in sorted(best):
            reduced = tuple(y[i] for i in step.keep)
            if reduced not in new or best[y] > new[reduced]:
                n = runs[y]
                origin = list(y)
                for i, w in step.at:
                    origin[i] -= n * w
                new[reduced] = best[y]
                pointers[reduced] = (tuple(origin[:width]), n)
        table = new
        back.append(pointers)
    built[name] = entries
    end, high = max(table.items(), key=lambda item: item[1])  # the first maximum, in table order
    counts = [0] * count
    for (_, step), pointers in zip(reversed(order.steps), reversed(back), strict=True):
        end, counts[step.cls] = pointers[end]
    return high, counts


def _maximise_within(
    order: Order, his: list[int], count: int, limit: int, built: dict[int, int], name: int, horizon: int
) -> tuple[int, list[int]]:
    """`_maximise` with sum_k n_k <= T: each key holds, instead of one value, its Pareto
    list of (turns used, value), turns ascending and values strictly ascending. A pair with
    more turns and no larger value than another at the same key is dropped: every
    completion of it completes the other within T to at least the same sum. The entries
    are the pairs (FrontierFull past `limit`)."""
    table: dict[tuple[int, ...], list[tuple[int, int]]] = {(): [(0, 0)]}
    back: list[dict[tuple[tuple[int, ...], int], tuple[tuple[int, ...], int, int]]] = []
    entries = 0
    for before, step in order.steps:
        width = len(before)
        grow = len(step.tops) - width
        hi = his[step.cls]
        base = {key + (0,) * grow: pairs for key, pairs in table.items()}
        keys = _widened_keys(base, step)
        best: dict[tuple[int, ...], list[tuple[int, int, int]]] = {}  # (turns, value, admissions here)
        for key in sorted(keys):
            candidates = [(t, v, 0) for t, v in base.get(key, ())]
            earlier = _retreat(key, step)
            if earlier is not None and earlier in best:
                candidates += [(t + 1, v + hi, n + 1) for t, v, n in best[earlier] if t < horizon]
            candidates.sort(key=lambda c: (c[0], -c[1], c[2]))
            kept: list[tuple[int, int, int]] = []
            for candidate in candidates:
                if not kept or candidate[1] > kept[-1][1]:
                    kept.append(candidate)
            if kept:
                best[key] = kept
                entries += len(kept)
        if entries > limit:
            raise FrontierFull
        merged: dict[tuple[int, ...], list[tuple[int, int, tuple[int, ...], int, int]]] = {}
        for key in sorted(best):
            reduced = tuple(key[i] for i in step.keep)
            for t, v, n in best[key]:
                origin = list(key)
                for i, w in step.at:
                    origin[i] -= n * w
                merged.setdefault(reduced, []).append((t, v, tuple(origin[:width]), t - n, n))
        new: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        pointers: dict[tuple[tuple[int, ...], int], tuple[tuple[int, ...], int, int]] = {}
        for reduced, candidates5 in merged.items():
            candidates5.sort(key=lambda c: (c[0], -c[1]))
            pairs: list[tuple[int, int]] = []
            for t, v, origin_key, origin_t, n in candidates5:
                if not pairs or v > pairs[-1][1]:
                    pairs.append((t, v))
                    pointers[(reduced, t)] = (origin_key, origin_t, n)
            new[reduced] = pairs
        table = new
        back.append(pointers)
    built[name] = entries
    end_turns, high = table[()][-1]  # the largest value within T turns
    end: tuple[int, ...] = ()
    counts = [0] * count
    for (_, step), pointers in zip(reversed(order.steps), reversed(back), strict=True):
        end, end_turns, counts[step.cls] = pointers[(end, end_turns)]
    return high, counts


def _widened_keys(base: Mapping[tuple[int, ...], object], step: Step) -> dict[tuple[int, ...], None]:
    """Every widened key of a step: the base keys and their chains of admissions (a chain
    stops where it meets a key already found: its continuation is found too), in the order
    found (the callers sort them)."""
    keys: dict[tuple[int, ...], None] = dict.fromkeys(base)
    for x in base:
        y = _advance(x, step)
        while y is not None and y not in keys:
            keys[y] = None
            y = _advance(y, step)
    return keys


def _advance(key: tuple[int, ...], step: Step) -> tuple[int, ...] | None:
    """The widened key after one more admission of the step's class, or None (no room)."""
    moved = list(key)
    for i, w in step.at:
        moved[i] += w
        if moved[i] > step.tops[i]:
            return None
    return tuple(moved)


def _retreat(key: tuple[int, ...], step: Step) -> tuple[int, ...] | None:
    """The widened key one admission of the step's class earlier, or None (below zero)."""
    moved = list(key)
    for i, w in step.at:
        moved[i] -= w
        if moved[i] < 0:
            return None
    return tuple(moved)
