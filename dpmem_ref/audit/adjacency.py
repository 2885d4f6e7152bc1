"""How two stores relate, and the bound an audit certifies against (Theorem 1, Corollary 1).

The certified bound of a pair is kappa(M, M') of Eq. (8): the cheapest set of protected
groups whose union covers the differing positions D. A single attribute a with D within
I_a is one such cover (cost B_a, Theorem 1), so kappa is never weaker than any of them;
when a cheaper multi-attribute cover exists, the deployment must meet that stronger
promise. Every single-attribute cover and the cheapest cover are listed, each with its
own verdict in the report.
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from dpmem_ref.audit.cover import minimum_cover
from dpmem_ref.config.load import InterfaceFile
from dpmem_ref.core.policy import adjacent_attributes, differing_positions


@attrs.frozen
class Adjacency:
    """The certified bound (kappa, Eq. 8), the cover attaining it, and every other cover."""

    kind: str  # "identical" | "attribute" | "cover" | "not coverable"
    differing: tuple[int, ...]
    attribute: str | None  # kind "attribute": the single group attaining kappa
    cover: tuple[str, ...] | None  # kind "cover": the multi-attribute cover attaining kappa
    bound: Fraction | None  # kappa; None = no finite bound (kappa = inf)
    also_adjacent: tuple[str, ...] = ()
    # Every single-attribute cover (D within I_a) and the cheapest cover: (attributes, cost).
    covers: tuple[tuple[tuple[str, ...], Fraction], ...] = ()
    # kind "not coverable": the differing positions outside every protected group.
    uncovered: tuple[int, ...] = ()

    def describe(self, name_a: str, name_b: str) -> str:
        if self.kind == "identical":
            return f"{name_a} and {name_b} are identical: bound 0"
        if self.kind == "attribute":
            also = f" (also adjacent for {', '.join(self.also_adjacent)})" if self.also_adjacent else ""
            return f"{name_a} ~_{self.attribute} {name_b}: D lies in I_{self.attribute}, bound B_{self.attribute}{also}"
        if self.kind == "cover":
            assert self.cover is not None
            within = (
                f"; D also lies in I_{', I_'.join(self.also_adjacent)}, whose larger cap is not the tightest promise"
                if self.also_adjacent
                else ""
            )
            return (
                f"{name_a} and {name_b}: cheapest cover {{{', '.join(self.cover)}}}, "
                f"bound kappa = {' + '.join('B_' + a for a in self.cover)} (Eq. 8, Corollary 1){within}"
            )
        where = ", ".join(map(str, self.uncovered))
        return (
            f"{name_a} and {name_b} differ outside every protected group (position{'s' if len(self.uncovered) > 1 else ''} "
            f"{where}): not coverable, kappa = inf (Eq. 8), no DP guarantee applies to this pair"
        )


def decide_adjacency(loaded: InterfaceFile, name_a: str, name_b: str) -> Adjacency:
    """kappa(M, M') (Eq. 8) with the cover attaining it: a single attribute when one attains
    it (the smallest B_a; first declared on ties), else the cheapest multi-attribute cover;
    "not coverable" when no cover exists; bound 0 for identical stores."""
    policy = loaded.interface.policy
    store_a, store_b = loaded.store(name_a), loaded.store(name_b)
    differing = differing_positions(store_a, store_b)
    positions = tuple(sorted(differing))
    if not differing:
        return Adjacency("identical", positions, None, None, Fraction(0))
    caps = policy.caps
    singles = adjacent_attributes(policy, store_a, store_b)
    cheapest = minimum_cover(policy, differing)
    if cheapest is None:
        grouped: frozenset[int] = frozenset().union(*(a.group for a in policy.attributes))
        uncovered = tuple(p for p in positions if p not in grouped)
        return Adjacency("not coverable", positions, None, None, None, uncovered=uncovered)
    covers: list[tuple[tuple[str, ...], Fraction]] = [((a,), caps[a]) for a in singles]
    if len(cheapest.attributes) > 1:
        covers.append((cheapest.attributes, cheapest.cost))
    covers.sort(key=lambda c: c[1])
    if singles:
        best = min(singles, key=lambda a: (caps[a], singles.index(a)))
        if caps[best] <= cheapest.cost:
            also = tuple(a for a in singles if a != best)
            return Adjacency("attribute", positions, best, None, caps[best], also, tuple(covers))
    return Adjacency("cover", positions, None, cheapest.attributes, cheapest.cost, tuple(singles), tuple(covers))
