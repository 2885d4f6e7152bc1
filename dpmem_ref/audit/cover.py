"""kappa(M, M') of Eq. (8): the minimum total cap of protected groups covering D.

`minimum_cover` is an exact branch and bound (weighted set cover; no 2^A enumeration):

1. Only attributes whose group meets D can help (caps are positive), and only through
   G_a & D. A position of D in no group makes kappa infinite (None).
2. Dominance: drop a if some b has G_a & D within G_b & D and B_b <= B_a (strictly
   smaller in one of the two, or the earlier in declaration order on a full tie). Any
   cover using a stays a cover, at no larger cost, with b in its place, so the minimum is
   unchanged.
3. Branch on the uncovered position with the fewest holders: every cover contains one
   of them, so trying each (cheapest first) is exhaustive.
4. Bound: positions whose holder sets are pairwise disjoint need pairwise distinct
   attributes, so the sum of their cheapest holders' caps is a lower bound on the cost of
   covering what is left (a greedy disjoint packing). A branch is cut when its cost plus
   that bound reaches the best cover found (starting from the greedy cover), so only
   strictly cheaper covers are pursued: the first cover of minimum cost found is
   returned. Caps are exact Fractions: no rounding can cut a better branch.

`minimum_cover_exhaustive` (every subset; small A) and `minimum_cover_z3` (the `verify`
extra) are independent cross-checks; the tests compare all three.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from itertools import combinations

import attrs

from dpmem_ref.core.policy import Policy

EXHAUSTIVE_LIMIT = 20  # the exhaustive cross-check's practical limit (2^A subsets)


@attrs.frozen
class Cover:
    """A cheapest cover C of the differing positions, and its cost sum_{a in C} B_a."""

    attributes: tuple[str, ...]
    cost: Fraction


def covers(policy: Policy, attributes: Iterable[str], differing: frozenset[int]) -> bool:
    union: frozenset[int] = frozenset().union(*(policy.attribute(a).group for a in attributes))
    return differing <= union


def minimum_cover_exhaustive(policy: Policy, differing: frozenset[int]) -> Cover | None:
    """Brute force over every subset; None when no cover exists (kappa = inf)."""
    names = policy.attribute_names
    caps = policy.caps
    best: Cover | None = None
    for size in range(len(names) + 1):
        for subset in combinations(names, size):
            if covers(policy, subset, differing):
                cost = sum((caps[a] for a in subset), Fraction(0))
                if best is None or (cost, subset) < (best.cost, best.attributes):
                    best = Cover(attributes=tuple(sorted(subset)), cost=cost)
    return best


def minimum_cover_z3(policy: Policy, differing: frozenset[int]) -> Cover | None:
    """z3 Optimize: minimise sum B_a x_a subject to every differing position covered."""
    import z3

    names = policy.attribute_names
    choose = {a: z3.Bool(f"use_{a}") for a in names}
    optimizer = z3.Optimize()
    for position in sorted(differing):
        holders = [choose[a.name] for a in policy.attributes if position in a.group]
        if not holders:
            return None
        optimizer.add(z3.Or(*holders))
    cost = z3.Sum(
        [z3.If(choose[a], z3.Q(policy.caps[a].numerator, policy.caps[a].denominator), z3.RealVal(0)) for a in names]
    )
    optimizer.minimize(cost)
    if optimizer.check() != z3.sat:
        return None
    model = optimizer.model()
    chosen = tuple(sorted(a for a in names if z3.is_true(model.eval(choose[a], model_completion=True))))
    if not covers(policy, chosen, differing):  # re-check the solver's answer
        raise AssertionError("z3 returned a non-cover")
    return Cover(attributes=chosen, cost=sum((policy.caps[a] for a in chosen), Fraction(0)))


def useful_attributes(policy: Policy, differing: frozenset[int]) -> list[tuple[str, frozenset[int], Fraction]]:
    """Steps 1-2: (name, G_a & D, B_a) of the attributes no other one dominates."""
    candidates = [(a.name, a.group & differing, a.cap) for a in policy.attributes if a.group & differing]
    kept = []
    for index, (name, part, cap) in enumerate(candidates):
        dominated = any(
            part <= other_part
            and other_cap <= cap
            and (other_part != part or other_cap != cap or other_index < index)
            for other_index, (_, other_part, other_cap) in enumerate(candidates)
            if other_index != index
        )
        if not dominated:
            kept.append((name, part, cap))
    return kept


class _Search:
    """Steps 3-4 over bit masks of D (bit i: the i-th differing position, sorted)."""

    def __init__(self, kept: list[tuple[str, frozenset[int], Fraction]], positions: list[int]) -> None:
        bit = {p: 1 << i for i, p in enumerate(positions)}
        self.names = [name for name, _, _ in kept]
        self.masks = [sum(bit[p] for p in part) for _, part, _ in kept]
        self.caps = [cap for _, _, cap in kept]
        self.count = len(positions)
        # holders[i]: attribute indices covering position i, cheapest first.
        self.holders = [
            sorted((j for j, mask in enumerate(self.masks) if mask >> i & 1), key=lambda j: (self.caps[j], j))
            for i in range(self.count)
        ]
        self.best_cost: Fraction | None = None
        self.best: tuple[int, ...] = ()

    def bound(self, uncovered: int) -> Fraction:
        """Step 4: the caps of cheapest holders of positions with pairwise disjoint holder sets."""
        used: set[int] = set()
        total = Fraction(0)
        order = sorted(
            (i for i in range(self.count) if uncovered >> i & 1), key=lambda i: -self.caps[self.holders[i][0]]
        )
        for i in order:
            holders = self.holders[i]
            if used.isdisjoint(holders):
                used.update(holders)
                total += self.caps[holders[0]]
        return total

    def greedy(self, uncovered: int) -> None:
        """A first incumbent: repeatedly the attribute with the least cap per new position."""
        chosen: list[int] = []
        cost = Fraction(0)
        while uncovered:
            j = min(
                (j for j in range(len(self.masks)) if self.masks[j] & uncovered),
                key=lambda j: (self.caps[j] / bin(self.masks[j] & uncovered).count("1"), j),
            )
            chosen.append(j)
            cost += self.caps[j]
            uncovered &= ~self.masks[j]
        self.best_cost, self.best = cost, tuple(chosen)

    def search(self, uncovered: int, chosen: tuple[int, ...], cost: Fraction) -> None:
        if not uncovered:
            if self.best_cost is None or cost < self.best_cost:
                self.best_cost, self.best = cost, chosen
            return
        assert self.best_cost is not None
        if cost + self.bound(uncovered) >= self.best_cost:
            return  # no strictly cheaper cover below this branch
        position = min((i for i in range(self.count) if uncovered >> i & 1), key=lambda i: len(self.holders[i]))
        for j in self.holders[position]:
            self.search(uncovered & ~self.masks[j], (*chosen, j), cost + self.caps[j])


def minimum_cover(policy: Policy, differing: frozenset[int]) -> Cover | None:
    """kappa (Eq. 8) with its cover; None if the differences are not coverable."""
    if not differing:
        return Cover(attributes=(), cost=Fraction(0))
    grouped: frozenset[int] = frozenset().union(*(a.group for a in policy.attributes))
    if not differing <= grouped:
        return None
    kept = useful_attributes(policy, differing)
    search = _Search(kept, sorted(differing))
    everything = (1 << search.count) - 1
    search.greedy(everything)
    search.search(everything, (), Fraction(0))
    assert search.best_cost is not None
    chosen = tuple(sorted(search.names[j] for j in search.best))
    if not covers(policy, chosen, differing):  # the answer is re-checked before it is returned
        raise AssertionError("branch and bound returned a non-cover")
    return Cover(attributes=chosen, cost=search.best_cost)
