"""The lattice programme: the ledger programme's longest path as one exact integer dynamic
programme over the box of kept ledger values, vectorised (numpy), for the pruned shape.

Where it applies (`plan`; otherwise the ledger programme runs as before):

(i)   the ledger programme prunes dominated moves (one slot per query, a public control,
      a pass query: `ledger` module docstring), and values only the horizon T asked
      (not every shorter one, as `components` needs);
(ii)  every followed query whose slot moves no kept ledger (it charges nothing kept, or
      eps = 0) has the exact zero step both ways and equal controls, as the pass has;
(iii) every followed query charging kept ledgers has, refused, the exact zero step both
      ways and equal controls, and, admitted, a finite step and equal controls;
(iv)  the longest chain of admissions fits in T (below).

The derivation. Under (i) the ledger programme's value at the start is the longest path
from the start over the moves it follows: from kept ledgers x, a followed query q either
is admitted (its slot's charge set C_q and units u_q fit: x_a + u_q <= B_a for a in C_q,
the integer test of `LedgerSearch.pattern`; implied caps are dropped, `ledger`) and moves
to x + u_q 1_{C_q} with its admitted step s_q (one summary per admission pattern: the
same at every state, the ledger programme's premise), or is refused (a step-0 self-loop by
(iii)), or is a pass (a step-0 self-loop by (ii)); an admitted step that is exactly 0
both ways is dominated by the pass and not followed, as the ledger programme does. Ledgers
only grow, so a multiset n of admissions (n_q admissions of q) can be played in any
order, in sum(n) turns, if and only if x(n) = sum_q n_q u_q 1_{C_q} <= B: every prefix
is below x(n). Refused queries and passes add 0. Hence

    V_T = max { sum_q n_q s_q : n >= 0 integer, x(n) <= B, sum_q n_q <= T }.

Queries with the same move vector (C_q, u_q) are interchangeable in the constraints, so
only the largest step of each class k counts: S_k = max_q s_q. By (iv), sum(n) <= T
holds for every n with x(n) <= B (each admission raises the digit sum below by at least
m = min_k |w_k|, and the digit sum is at most sum_a (levels_a - 1)), so the horizon does
not bind and V_T = g(0), where, over every x in the box of kept ledger values,

    g(x) = max(0, max over classes k with x + v_k <= B of S_k + g(x + v_k)).

In units of g_a (the gcd of the units charged to kept ledger a) the box has
prod_a (B_a / g_a + 1) cells; every class raises the digit sum, so g is computed once,
hyperplane by hyperplane of constant digit sum, from the top one down, each hyperplane a
few numpy operations per class.

Exactness. Each step's enclosure [lo, hi] (from the same summaries the ledger programme
uses) has dyadic ends; with 2^-p their finest power, every end is an exact integer
multiple of 2^-p, and the programme runs on those integers (Python integers in numpy
object arrays: no rounding anywhere). With H_k = max_q hi_q >= S_k it computes
U = max_n sum_k n_k H_k >= V_T exactly, and records the maximising path n* (the first
class attaining the maximum at each state, in followed order). The lower end is
L = sum_k n*_k lo_k, with lo_k the lower end of the step of q_k, the member of class k
with the largest upper end (first in followed order): n* played with those queries is a
real strategy whose exact loss is sum_k n*_k s_{q_k} >= L, and V_T is at least that. [L, U]
is rounded outward to the engine's precision: an enclosure of V_T as proved as the
ledger programme's, no wider than the chain length times the widest step enclosure.
The witness plays n* along that path (the query with the largest upper end of each
class, as the ledger programme picks it), then the pass up to T turns, replayed with
real cursors over both stores (`witness_chain`).

The lattice replaces the sparse ledger programme when that one's estimate reaches
LATTICE_FROM states and the box fits `--max-states` (the box is the estimate then: every
cell is valued); below, the sparse programme is as fast, and its outputs (which of
exactly tied strategies the witness plays) stay those of earlier releases.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd, prod
from typing import TYPE_CHECKING, Any

import numpy as np

from dpmem_ref.analysis.direction import Best, LossDirection
from dpmem_ref.analysis.loss import ZERO, Loss
from dpmem_ref.analysis.replay import witness_chain
from dpmem_ref.analysis.witness import Node

if TYPE_CHECKING:
    from dpmem_ref.analysis.ledger import LedgerSearch

LATTICE_FROM = 20_000  # sparse estimate from which the lattice replaces the sparse programme ("auto")
LATTICE_MAX_CELLS = 4_000_000  # the largest box valued (memory: about 150 bytes a cell)


class Class:
    """One move vector (kept ledgers, in digits) and the queries admitted with it."""

    __slots__ = ("members", "offset", "step", "weight")

    def __init__(self, step: tuple[int, ...]) -> None:
        self.step = step  # digits added to each kept ledger
        self.weight = sum(step)
        self.offset = 0
        self.members: list[tuple[int, Loss, Loss]] = []  # (query index, step ab, step ba)


class Plan:
    """What `plan` decided: the box (levels per kept ledger) and the classes."""

    __slots__ = ("cells", "classes", "levels", "pass_query")

    def __init__(self, levels: tuple[int, ...], classes: list[Class], pass_query: int) -> None:
        self.levels, self.classes, self.pass_query = levels, classes, pass_query
        self.cells = prod(levels)


def box(search: LedgerSearch) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(levels, digit size g_a) per kept ledger, from the moving queries' charges alone."""
    sizes = []
    for i in range(len(search.relevant)):
        units = [slot.units for q in search.moving for slot in search.slots[q] if slot.charge and i in slot.charge]
        sizes.append(gcd(*units) if units else 0)
    if not all(sizes):
        return None
    return tuple(cap // size + 1 for cap, size in zip(search.caps, sizes, strict=True)), tuple(sizes)


class Shape:
    """What (i)-(iii) decided (module docstring): the box (levels and digit sizes per kept
    ledger), the classes and the pass query; shared with the frontier programme
    (`analysis.frontier`), which needs no box and no (iv)."""

    __slots__ = ("classes", "levels", "pass_query", "sizes")

    def __init__(self, levels: tuple[int, ...], sizes: tuple[int, ...], classes: list[Class], pass_query: int) -> None:
        self.levels, self.sizes, self.classes, self.pass_query = levels, sizes, classes, pass_query


def shape(search: LedgerSearch) -> Shape | None:
    """The classes of this search, or None where (i)-(iii) fail (module docstring)."""
    if not search.prune or search.all_horizons or not search.capped or not search.relevant:
        return None  # (i); no kept ledger: the sparse programme has one state
    found = box(search)
    if found is None:
        return None
    levels, sizes = found
    start = tuple(0 for _ in levels)
    full = search.caps  # a state where every charging slot is refused (its units are > 0)
    classes: dict[tuple[int, ...], Class] = {}
    pass_query = -1
    for q in search.followed:
        slot = search.slots[q][0] if search.slots[q] else None
        if slot is None or not slot.charge or slot.units == 0:
            bits, _ = search.pattern(q, start)
            summary = search.summary(q, bits, start)
            if summary.terminal or not (summary.ab.is_zero and summary.ba.is_zero):
                return None  # (ii)
            if pass_query < 0 and summary.delta == start:
                pass_query = q
            continue
        bits, _ = search.pattern(q, full)
        refused = search.summary(q, bits, full)
        if bits != (False,) or refused.terminal or not (refused.ab.is_zero and refused.ba.is_zero):
            return None  # (iii), refused
        if any(slot.units > search.caps[i] for i in slot.charge):
            continue  # refused at the start, so everywhere (ledgers only grow)
        bits, _ = search.pattern(q, start)
        admitted = search.summary(q, bits, start)
        if bits != (True,) or admitted.terminal or not (admitted.ab.is_finite and admitted.ba.is_finite):
            return None  # (iii), admitted
        if admitted.ab.is_zero and admitted.ba.is_zero:
            continue  # dominated by the pass
        step = tuple(d // size for d, size in zip(admitted.delta, sizes, strict=True))
        classes.setdefault(step, Class(step)).members.append((q, admitted.ab, admitted.ba))
    if pass_query < 0:
        return None
    return Shape(levels, sizes, list(classes.values()), pass_query)


def horizon_binds(found: Shape, horizon: int) -> bool:
    """Whether some admission counts within the box exceed T: (iv) fails."""
    classes = found.classes
    return bool(classes) and sum(level - 1 for level in found.levels) // min(k.weight for k in classes) > horizon


def plan(search: LedgerSearch, limit: int, found: Shape | None = None) -> Plan | None:
    """The lattice for this search, or None where (i)-(iv) fail or the box exceeds `limit`
    (module docstring). `found`: the shape, if already computed."""
    found = shape(search) if found is None else found
    if found is None or prod(found.levels) > min(limit, LATTICE_MAX_CELLS):
        return None
    if horizon_binds(found, search.horizon):
        return None  # (iv)
    return Plan(found.levels, found.classes, found.pass_query)


def _scaled(loss: Loss, p: int) -> tuple[int, int]:
    """The ends of a finite loss as exact integers in units of 2^-p."""
    out = []
    for raw in (loss.lo, loss.hi):
        sign, man, exp, _ = raw
        value = int(man) << (exp + p)
        out.append(-value if sign else value)
    return out[0], out[1]


def _power(losses: list[Loss]) -> int:
    """p with every end of `losses` an integer multiple of 2^-p."""
    p = 0
    for loss in losses:
        for _sign, man, exp, _ in (loss.lo, loss.hi):
            if man:
                p = max(p, -int(exp))
    return p


def solve(search: LedgerSearch, found: Plan) -> Best[Node]:
    """The worst case both ways with witnesses (module docstring), filling the search's
    bookkeeping as the ledger programme's one pass does."""
    levels = found.levels
    n = len(levels)
    cells = found.cells
    strides = [1] * n
    for i in range(n - 2, -1, -1):
        strides[i] = strides[i + 1] * levels[i + 1]
    digits = np.indices(levels, dtype=np.int32).reshape(n, cells)
    top = np.asarray(levels, dtype=np.int32).reshape(n, 1) - 1
    height = digits.sum(axis=0)
    order = np.argsort(-height, kind="stable")
    per_height = np.bincount(height, minlength=int(top.sum()) + 1)
    ends = np.cumsum(per_height[::-1])  # cells of the hyperplanes from the top one down
    feasible = []
    for k in found.classes:
        k.offset = sum(w * s for w, s in zip(k.step, strides, strict=True))
        move = np.asarray(k.step, dtype=np.int32).reshape(n, 1)
        feasible.append(np.all(digits + move <= top, axis=0))
    p = _power([loss for k in found.classes for _, ab, ba in k.members for loss in (ab, ba)])
    results: list[tuple[Loss, Node]] = []
    for direction in LossDirection:
        his: list[int] = []
        los: list[int] = []
        picks: list[int] = []
        for k in found.classes:
            scaled = [(q, *_scaled(direction.pick(ab, ba), p)) for q, ab, ba in k.members]
            hi = max(end for _, _, end in scaled)
            pick, lo, _ = next(member for member in scaled if member[2] == hi)  # first with the largest upper end
            his.append(hi)
            los.append(lo)  # the lower end of the step the witness plays
            picks.append(pick)
        values: Any = np.zeros(cells, dtype=object)  # g(x) in units of 2^-p, upper ends
        begin = 0
        for end in ends:
            layer = order[begin:end]
            begin = int(end)
            for k, fits, hi in zip(found.classes, feasible, his, strict=True):
                where = fits[layer]
                if not where.any():
                    continue
                source = layer[where]
                values[source] = np.maximum(values[source], values[source + k.offset] + hi)
        # The maximising path n*, and its lower ends.
        chosen = []
        low = 0
        x = 0
        while values[x] > 0:
            for c, (k, fits, hi) in enumerate(zip(found.classes, feasible, his, strict=True)):
                if fits[x] and values[x + k.offset] + hi == values[x]:
                    chosen.append(picks[c])
                    low += los[c]
                    x += k.offset
                    break
            else:  # pragma: no cover - values[x] > 0 is attained by some class by construction
                raise AssertionError("lattice programme: no class attains the value")
        high = int(values[0])
        value = ZERO if high == 0 else Loss.of_fractions(Fraction(low, 1 << p), Fraction(high, 1 << p))
        queries = [search.queries[q] for q in chosen]
        queries += [search.queries[found.pass_query]] * (search.horizon - len(queries))
        node = witness_chain(
            search.interface,
            search.store_a,
            search.store_b,
            queries,
            direction,
            search.steps,
            search.strict,
        )
        results.append((value, node))
    search.state_count = cells
    search.iterations, search.longest, search.fixed_point = 1, True, None
    (ab, ab_node), (ba, ba_node) = results
    search.start_values = [(ZERO, ZERO), (ab, ba)]
    search.choices, search.states, search.index = [], [], {}
    return Best(ab, ab_node, ba, ba_node)
