"""The frontier programme: the lattice programme's integer programme (`analysis.lattice`)
solved class by class, keeping only the ledgers still shared with the classes to come,
with the horizon as one more ledger where it binds.

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
active ledgers and the turns. Its work is the tables' sizes times the admissions tried,
so a chain of coupled ledgers costs a few entries per class where the lattice's box has
(B/g + 1)^A cells, and a binding horizon costs a factor T + 1 instead of a value
iteration over every state.

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

from fractions import Fraction
from math import prod
from typing import TYPE_CHECKING

from dpmem_ref.analysis.direction import Best, LossDirection
from dpmem_ref.analysis.lattice import Shape, _power, _scaled, horizon_binds
from dpmem_ref.analysis.loss import ZERO, Loss
from dpmem_ref.analysis.replay import witness_chain
from dpmem_ref.analysis.witness import Node

if TYPE_CHECKING:
    from dpmem_ref.analysis.ledger import LedgerSearch

FRONTIER_MAX_WORK = 20_000_000  # the most (entry, admissions) pairs the frontier programme plans for


class FrontierFull(Exception):
    """The frontier programme passed `--max-states`: the sparse programme runs instead."""


class Step:
    """One class in the elimination order and the table layout around it."""

    __slots__ = ("at", "cls", "keep", "most", "tops")

    def __init__(
        self, cls: int, at: tuple[tuple[int, int], ...], tops: tuple[int, ...], keep: tuple[int, ...], most: int
    ) -> None:
        self.cls = cls  # the class's index in the shape
        self.at = at  # (position in the widened key, digits per admission) for each ledger it moves
        self.tops = tops  # the top digit of each position of the widened key
        self.keep = keep  # positions of the widened key kept after this class
        self.most = most  # the most admissions of the class (its tightest ledger, or T)


class Plan:
    """The elimination order, the table layout, and a bound on the work."""

    __slots__ = ("steps", "tops", "turns", "work")

    def __init__(self, steps: list[tuple[tuple[int, ...], Step]], tops: dict[int, int], turns: bool, work: int) -> None:
        self.steps, self.tops, self.turns, self.work = steps, tops, turns, work


def plan(found: Shape, horizon: int) -> Plan | None:
    """An elimination order for `found` (greedy: the class whose widened table is smallest
    next, then the one retiring most ledgers, then the first), or None if its work bound
    passes FRONTIER_MAX_WORK or some class moves no kept ledger."""
    classes = found.classes
    if not classes or any(k.weight == 0 for k in classes):
        return None
    turns = horizon_binds(found, horizon)
    tops: dict[int, int] = {i: level - 1 for i, level in enumerate(found.levels)}
    if turns:
        tops[-1] = horizon  # the turns used, a ledger every class charges one digit
    moves = [{i: w for i, w in enumerate(k.step) if w} | ({-1: 1} if turns else {}) for k in classes]
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
        most = min(tops[i] // w for i, w in moves[c].items())
        work += prod(tops[i] + 1 for i in before) * (most + 1)
        if work > FRONTIER_MAX_WORK:
            return None
        at = tuple((position[i], w) for i, w in sorted(moves[c].items()))
        keep = tuple(position[i] for i in after)
        steps.append((before, Step(c, at, tuple(tops[i] for i in widened), keep, most)))
        active = list(after)
    return Plan(steps, tops, turns, work)


def solve(search: LedgerSearch, found: Shape, frontier: Plan) -> Best[Node]:
    """The worst case both ways with witnesses (module docstring), filling the search's
    bookkeeping as the lattice does; FrontierFull past `search.max_states` entries."""
    classes = found.classes
    p = _power([loss for k in classes for _, ab, ba in k.members for loss in (ab, ba)])
    results: list[tuple[Loss, Node]] = []
    entries = 0
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
        table: dict[tuple[int, ...], int] = {(): 0}
        back: list[dict[tuple[int, ...], tuple[tuple[int, ...], int]]] = []
        built = 0
        for before, step in frontier.steps:
            width = len(before)
            grow = len(step.tops) - width
            hi = his[step.cls]
            tops = step.tops
            new: dict[tuple[int, ...], int] = {}
            pointers: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}
            for key, value in table.items():
                widened = list(key) + [0] * grow
                n = 0
                while True:
                    reduced = tuple(widened[i] for i in step.keep)
                    total = value + n * hi
                    if reduced not in new or total > new[reduced]:
                        if reduced not in new:
                            built += 1
                            if direction is LossDirection.A_OVER_B and entries + built > search.max_states:
                                raise FrontierFull
                        new[reduced] = total
                        pointers[reduced] = (key, n)
                    if n == step.most or any(widened[i] + w > tops[i] for i, w in step.at):
                        break
                    for i, w in step.at:
                        widened[i] += w
                    n += 1
            table = new
            back.append(pointers)
        if direction is LossDirection.A_OVER_B:
            entries = built
        end, high = max(table.items(), key=lambda item: item[1])  # the first maximum, in table order
        counts = [0] * len(classes)
        for (_, step), pointers in zip(reversed(frontier.steps), reversed(back), strict=True):
            end, counts[step.cls] = pointers[end]
        low = sum(n * lo for n, lo in zip(counts, los, strict=True))
        loss = ZERO if high == 0 else Loss.of_fractions(Fraction(low, 1 << p), Fraction(high, 1 << p))
        chosen = [q for c, n in enumerate(counts) for q in [picks[c]] * n]
        queries = [search.queries[q] for q in chosen]
        queries += [search.queries[found.pass_query]] * (search.horizon - len(queries))
        node = witness_chain(
            search.interface, search.store_a, search.store_b, queries, direction, search.steps, search.strict
        )
        results.append((loss, node))
    search.state_count = entries
    search.iterations, search.longest, search.fixed_point = 1, True, None
    (ab, ab_node), (ba, ba_node) = results
    search.start_values = [(ZERO, ZERO), (ab, ba)]
    search.choices, search.states, search.index = [], [], {}
    return Best(ab, ab_node, ba, ba_node)
