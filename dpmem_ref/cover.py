"""kappa(M, M') of Eq. (8): the minimum total cap of protected groups covering D.

Exact by exhaustive search over attribute subsets (fine up to ~20 attributes); beyond
that a z3 optimisation (the `verify` extra) whose answer is re-checked for coverage.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from itertools import combinations

import attrs

from dpmem_ref.policy import Policy

EXHAUSTIVE_LIMIT = 20


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


def minimum_cover(policy: Policy, differing: frozenset[int]) -> Cover | None:
    """kappa (Eq. 8) with its cover; None if the differences are not coverable."""
    if not differing:
        return Cover(attributes=(), cost=Fraction(0))
    if len(policy.attributes) <= EXHAUSTIVE_LIMIT:
        return minimum_cover_exhaustive(policy, differing)
    return minimum_cover_z3(policy, differing)
