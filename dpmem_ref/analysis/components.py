"""Independent components of the ledger programme: many differing groups at the cost of one.

Where the ledger programme applies (`ledger.applies`), take R (the sliced attributes,
`ledger` module docstring) and join two attributes of R whenever one query's turn charges
both (in one slot or in two). Each class c of that relation is a component; a query
belongs to the component its R-charges lie in; a free query (it charges no attribute of
R) moves no ledger that decides anything, and is put in every component's catalogue (a
free turn counts in whichever component the allocation below gives it). Then, for every
query q of component c:

- the admission of each of q's slots reads only ledgers of c (a slot charging outside R
  charges nothing in R, and one charging inside R charges only attributes of c);
- q's release law and its step (both directions) depend on the prefix only through those
  admissions (the ledger programme's premise), so only through the ledgers of c;
- q moves only ledgers of c (and ledgers outside R, which decide nothing).

So a path (a sequence of queries and released views, the object the ledger programme
maximises over) is an interleaving of one path per component, each evolving its own
ledgers from zero as if the others were absent; its loss, a sum of step losses, is the sum
of the components' path losses; and any choice of per-component paths interleaves into
a path. Hence, with f_c(t) the worst loss of exactly t turns of component c's queries
from zero ledgers (f_c(0) = 0),

    V_T = max over t_c >= 0 with sum_c t_c = T of sum_c f_c(t_c)

(every turn asks some query, and every query lies in one component, or is free and
counted in one). f_c(t) for
every t <= T is V_t at the start of component c's own ledger programme (its value
iteration computes V_1, ..., V_T there, `LedgerSearch.value_at`), so the state space is
the sum of the components' lattices instead of their product, and the allocation is a
knapsack over components in O(C T^2) interval operations. Intervals: each f_c(t) is an
outward-rounded enclosure, `add` and `join` are monotone and outward, so the result
encloses V_T exactly as the undivided programme's does; an infinite f_c(t) makes V_T
infinite. The witness concatenates the components' worst query sequences for the chosen
allocation and is replayed with real cursors over the whole interface.
"""

from __future__ import annotations

from dpmem_ref.analysis.direction import Best, LossDirection
from dpmem_ref.analysis.ledger import LedgerSearch
from dpmem_ref.analysis.loss import IMPOSSIBLE, ZERO, Loss
from dpmem_ref.analysis.replay import witness_chain
from dpmem_ref.analysis.steps import SearchProblem, StepTable
from dpmem_ref.analysis.witness import Node
from dpmem_ref.core.transcript import Query


def components(whole: LedgerSearch) -> list[tuple[int, ...]]:
    """Query indices per component (module docstring), each with the free queries."""
    relevant = set(whole.sliced)  # R itself: a ledger dropped as implied still joins the queries charging it
    parent = {a: a for a in relevant}

    def root(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    touched: list[set[str]] = []
    for turn in whole.reads:
        mine = set().union(*(charge & relevant for charge, _, _ in turn)) if turn else set()
        touched.append(mine)
        first = next(iter(mine), None)
        for other in mine:
            parent[root(other)] = root(first)  # type: ignore[arg-type]
    groups: dict[str, list[int]] = {}
    free: list[int] = []
    for q, mine in enumerate(touched):
        if mine:
            groups.setdefault(root(next(iter(mine))), []).append(q)
        else:
            free.append(q)
    if not groups:
        return [tuple(free)]
    # The free queries move no ledger of R: each component's catalogue includes them (a
    # free turn is then attributed to whichever component the allocation gives it), so
    # every component keeps its pass query, its dominance pruning and its early stop.
    return [tuple(sorted(qs + free)) for qs in groups.values()]


class ComponentSearch(SearchProblem):
    """The worst case as the best allocation of turns to independent components."""

    def setup(self) -> None:
        self.whole = LedgerSearch(
            self.interface, self.store_a, self.store_b, self.horizon, self.queries, self.strict, self.max_states
        )
        self.parts = [
            LedgerSearch(
                self.interface,
                self.store_a,
                self.store_b,
                self.horizon,
                tuple(self.queries[q] for q in qs),
                self.strict,
                self.max_states,
            )
            for qs in components(self.whole)
        ]
        for part in self.parts:
            part.all_horizons = True  # the allocation reads f_c(t) for every t <= T

    @property
    def splits(self) -> bool:
        """More than one component: the decomposition pays off."""
        return len(self.parts) > 1

    def estimate(self) -> int:
        """A bound on the ledger states built: the sum over components."""
        return sum(part.estimate() for part in self.parts)

    def least_states(self) -> tuple[int, bool]:
        """A lower bound on the ledger states built: the sum over components."""
        bounds = [part.least_states() for part in self.parts]
        return sum(b for b, _ in bounds), any(cut for _, cut in bounds)

    def run(self) -> Best[Node]:
        built = 0
        for part in self.parts:
            part.max_states = self.max_states - built  # the limit bounds the components' sum
            part.run()
            built += part.state_count
        self.state_count = sum(part.state_count for part in self.parts)
        results = []
        for direction in LossDirection:
            value, allocation = self.allocate(direction)
            chosen: list[Query] = []
            for part, turns in zip(self.parts, allocation, strict=True):
                if turns:
                    chosen += part.chosen_queries(part.choices, direction, part.states, part.index, turns)
            node = witness_chain(
                self.interface, self.store_a, self.store_b, chosen, direction, StepTable(), self.strict
            )
            results.append((value, node))
        (ab, ab_node), (ba, ba_node) = results
        return Best(ab, ab_node, ba, ba_node)

    def allocate(self, direction: LossDirection) -> tuple[Loss, list[int]]:
        """max over sum t_c = T of sum f_c(t_c), with the allocation attaining it."""
        horizon = self.horizon
        best: list[Loss] = [ZERO] + [IMPOSSIBLE] * horizon  # best[t]: components so far, t turns in all
        picks: list[list[int]] = []
        for part in self.parts:
            values = [direction.pick(*part.value_at(t)) for t in range(horizon + 1)]
            new: list[Loss] = [IMPOSSIBLE] * (horizon + 1)
            pick = [0] * (horizon + 1)
            for total in range(horizon + 1):
                for mine in range(total + 1):
                    before = best[total - mine]
                    if before.is_impossible:
                        continue
                    candidate = values[mine].add(before)
                    if new[total].is_impossible or candidate.ranks_above(new[total]):
                        pick[total] = mine
                    new[total] = new[total].join(candidate)
            best = new
            picks.append(pick)
        allocation = [0] * len(self.parts)
        left = horizon
        for c in range(len(self.parts) - 1, -1, -1):
            allocation[c] = picks[c][left]
            left -= allocation[c]
        return best[horizon], allocation

    @property
    def states_explored(self) -> int:
        return sum(part.states_explored for part in self.parts)
