"""Hypothesis generators for the proof suite: interfaces, stores, adjacent pairs,
and observable controls (`cases()`, adaptive strategies and LLM channels: `strategies.cases`).

Every property test draws its cases from here. A generated `Case` is a small, finite
DP-MemView deployment that satisfies the contract C1-C6 by construction:

- a layout of 1-4 slots over 2-8 positions, 1-3 protected attributes whose groups are
  drawn to overlap often (a shared position is forced with probability ~1/2);
- per slot a vocabulary of 2-4 views whose first view is the generic one (C1);
- a query catalogue whose routes activate one or several slots, each with a non-empty
  read set inside its slot and, sometimes, a declared over-charge (C2 allows supersets);
- a scorer with scores in [0, 1] and a *valid* declared sensitivity, either tight (the
  exact sup of Eq. 6, computed in closed form) or loose: an additive score table over
  discrete memory levels, or the paper's linear tag scorer with any allowed weights;
- a budget rule: online K or a preallocated plan C_a;
- a router (fixed, or one that reorders and narrows reads from the released history:
  public, so C4 holds), an observable control that reads public state only (C6), an
  LLM channel (deterministic or randomized) that sees (q_t, v_t, tau_<t) only (Eq. 2),
  and an adaptive query strategy (fixed, deterministic-reactive, or randomized).

Stores come in pairs: `adjacent pair for a chosen attribute` (differences inside I_a
only) or a multi-group pair (differences across several groups, possibly outside every
group). All numbers are exact rationals; the reprs are short so that shrunk cases read
as a handful of lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import attrs
from hypothesis import strategies as st

from dpmem_ref import (
    Attribute,
    Interface,
    Layout,
    LinearWeights,
    OnlineBudget,
    Policy,
    PreallocatedBudget,
    Query,
    SlotRead,
    Store,
    View,
    Vocabulary,
)
from dpmem_ref.core.views import Vocabulary as _Vocabulary
from proofs_as_tests.strategies.parts import (
    CAPS,
    EPSILONS,
    TABLE_VALUES,
    Channel,
    QueryStrategy,
    TableScorer,
    exact_table_sensitivity,
    slot_name,
    view_name,
)

# ---------------------------------------------------------------------------------------
# The generated case


@attrs.frozen
class Case:
    """A finite DP-MemView deployment plus two stores and an attribute (or None for a
    multi-group pair), a query strategy, an LLM channel and a horizon."""

    interface: Interface
    store_a: Store
    store_b: Store
    attribute: str | None
    strategy: QueryStrategy
    channel: Channel
    horizon: int

    def __repr__(self) -> str:
        i = self.interface
        lines = [
            "Case(",
            f"  positions={list(i.policy.layout.position_slots)},",
            "  attributes=" + ", ".join(f"{a.name}:I={sorted(a.group)},B={a.cap}" for a in i.policy.attributes) + ",",
            f"  budget={i.budget!r}, router={type(i.router).__name__}, control={i.control.name},",
            "  vocabularies=" + "; ".join(f"{v.slot}:{list(v.names)}" for v in i.vocabularies) + ",",
            "  queries="
            + "; ".join(
                q.name
                + ":"
                + ",".join(
                    f"{r.slot}{sorted(r.positions)}" + (f"+charge{sorted(r.charge)}" if r.charge is not None else "")
                    for r in q.reads
                )
                for q in i.queries
            )
            + ",",
            f"  scorer={i.scorer!r},",
            f"  store_a={[sorted(it.tags) for it in self.store_a.items]},",
            f"  store_b={[sorted(it.tags) for it in self.store_b.items]},",
            f"  attribute={self.attribute!r}, strategy={self.strategy!r}, channel={self.channel!r}, horizon={self.horizon})",
        ]
        return "\n".join(lines)

    @property
    def generics(self) -> tuple[str, ...]:
        return tuple(v.generic for v in self.interface.vocabularies)


@st.composite
def layouts(draw: st.DrawFn, max_slots: int = 4, max_positions: int = 8) -> Layout:
    """1-4 slots over 2-8 positions; every slot owns at least one position."""
    n_slots = draw(st.integers(1, max_slots))
    n_positions = draw(st.integers(max(2, n_slots), max_positions))
    extra = draw(st.lists(st.integers(0, n_slots - 1), min_size=n_positions - n_slots, max_size=n_positions - n_slots))
    assignment = sorted(list(range(n_slots)) + extra)
    return Layout(tuple(slot_name(k) for k in assignment))


@st.composite
def policies(draw: st.DrawFn, layout: Layout | None = None, max_attributes: int = 3) -> Policy:
    """1-3 attributes with non-empty groups that overlap about half the time."""
    if layout is None:
        layout = draw(layouts())
    positions = list(range(1, layout.size + 1))
    n_attributes = draw(st.integers(1, max_attributes))
    groups = [
        set(draw(st.sets(st.sampled_from(positions), min_size=1, max_size=min(4, layout.size))))
        for _ in range(n_attributes)
    ]
    if n_attributes > 1 and draw(st.booleans()):
        shared = draw(st.sampled_from(positions))
        groups[0].add(shared)
        groups[1].add(shared)
    caps = [draw(st.sampled_from(CAPS)) for _ in range(n_attributes)]
    attributes = tuple(
        Attribute(name=f"a{k}", group=frozenset(group), cap=cap) for k, (group, cap) in enumerate(zip(groups, caps, strict=True))
    )
    return Policy(layout=layout, attributes=attributes)


def vocabularies_for(layout: Layout, sizes: Sequence[int]) -> tuple[Vocabulary, ...]:
    return tuple(
        _Vocabulary(
            slot=slot,
            views=tuple(View(name=view_name(slot, k), text=view_name(slot, k)) for k in range(size)),
            generic=view_name(slot, 0),
        )
        for slot, size in zip(layout.slots, sizes, strict=True)
    )


@st.composite
def vocabularies(draw: st.DrawFn, layout: Layout, max_views: int = 4) -> tuple[Vocabulary, ...]:
    """One vocabulary of 2-4 views per slot, the generic view first (C1)."""
    sizes = [draw(st.integers(2, max_views)) for _ in layout.slots]
    return vocabularies_for(layout, sizes)


@st.composite
def routes(draw: st.DrawFn, policy: Policy, max_queries: int = 3, max_slots_per_query: int = 2) -> tuple[Query, ...]:
    """Queries activating one or several slots (ordered), each with a non-empty read set
    inside its slot; a declared charge set, when present, is a superset of Gamma* (C2)."""
    layout = policy.layout
    n_queries = draw(st.integers(1, max_queries))
    queries = []
    for k in range(n_queries):
        n = draw(st.integers(1, min(max_slots_per_query, len(layout.slots))))
        slots = draw(st.permutations(layout.slots))[:n]
        reads = []
        for slot in slots:
            own = sorted(layout.positions_of(slot))
            positions = frozenset(draw(st.sets(st.sampled_from(own), min_size=1, max_size=len(own))))
            charge = None
            if draw(st.integers(0, 3)) == 0:  # over-charge: Gamma* plus one more attribute
                extra = draw(st.sampled_from(policy.attribute_names))
                charge = policy.gamma_star(positions) | {extra}
            reads.append(SlotRead(slot=slot, positions=positions, charge=charge))
        queries.append(Query(name=f"q{k}", text=f"query {k}", reads=tuple(reads)))
    return tuple(queries)


@st.composite
def budget_rules(draw: st.DrawFn, policy: Policy) -> OnlineBudget | PreallocatedBudget:
    """Online K in 1..4, or a preallocated plan C_a in 1..4 for every attribute."""
    if draw(st.booleans()):
        return OnlineBudget(K=draw(st.integers(1, 4)))
    return PreallocatedBudget.from_mapping({a: draw(st.integers(1, 4)) for a in policy.attribute_names})


@st.composite
def table_scorers(
    draw: st.DrawFn, policy: Policy, vocabs: Sequence[Vocabulary], queries: Sequence[Query], levels: int,
    reads_subsets: bool,
) -> TableScorer:
    layout = policy.layout
    table: dict[int, dict[str, tuple[Fraction, ...]]] = {}
    by_slot = {v.slot: v for v in vocabs}
    for position in range(1, layout.size + 1):
        vocabulary = by_slot[layout.slot_of(position)]
        table[position] = {
            name: tuple(draw(st.sampled_from(TABLE_VALUES)) for _ in range(levels)) for name in vocabulary.names
        }
    tight = draw(st.booleans())
    sensitivities = []
    for vocabulary in vocabs:
        exact = exact_table_sensitivity(table, policy, queries, vocabulary, reads_subsets)
        declared = exact if exact > 0 else Fraction(1)
        if not tight:
            declared = declared + draw(st.sampled_from((Fraction(1, 4), Fraction(1, 2), Fraction(1))))
        sensitivities.append((vocabulary.slot, declared))
    frozen = tuple((p, tuple(sorted(row.items()))) for p, row in sorted(table.items()))
    return TableScorer(table=frozen, sensitivities=tuple(sensitivities), tight=tight)


TAGS = ("t0", "t1", "t2")


@st.composite
def linear_weights(draw: st.DrawFn) -> LinearWeights:
    """Any weights the config format allows: non-negative, summing to at most 1."""
    parts = [draw(st.integers(0, 5)) for _ in range(3)]
    total = draw(st.integers(max(1, sum(parts)), max(1, sum(parts)) + 5))
    return LinearWeights(*(Fraction(p, total) for p in parts))


def tagged_vocabularies(layout: Layout, sizes: Sequence[int], compat: Sequence[Sequence[frozenset[str]]],
                        spec: Sequence[Sequence[frozenset[str]]]) -> tuple[Vocabulary, ...]:
    result = []
    for s, (slot, size) in enumerate(zip(layout.slots, sizes, strict=True)):
        views = [View(name=view_name(slot, 0), text=view_name(slot, 0))]
        for k in range(1, size):
            views.append(View(name=view_name(slot, k), text=view_name(slot, k), compatible=compat[s][k - 1],
                              specific=spec[s][k - 1]))
        result.append(_Vocabulary(slot=slot, views=tuple(views), generic=view_name(slot, 0)))
    return tuple(result)


# ---------------------------------------------------------------------------------------
# Score pairs for the per-step EM bound


@st.composite
def score_pairs(draw: st.DrawFn, max_views: int = 4) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction, Fraction]:
    """(u, u', eps, Delta) with u, u' in [0, 1]^n, n in 2..4, ||u - u'||_inf <= Delta,
    Delta either tight (the actual sup norm) or loose."""
    n = draw(st.integers(2, max_views))
    grid = st.integers(0, 12).map(lambda k: Fraction(k, 12))
    u = tuple(draw(grid) for _ in range(n))
    u2 = tuple(draw(grid) for _ in range(n))
    gap = max(abs(x - y) for x, y in zip(u, u2, strict=True))
    delta = gap if gap > 0 and draw(st.booleans()) else gap + draw(st.sampled_from((Fraction(1, 12), Fraction(1, 2), Fraction(1))))
    eps = draw(st.sampled_from(EPSILONS))
    return u, u2, eps, delta


@st.composite
def near_bound_score_pairs(
    draw: st.DrawFn, max_views: int = 4
) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...], Fraction, Fraction]:
    """(u, u', eps, Delta) with ||u - u'||_inf = Delta exactly: one view moves by +Delta,
    the others by -Delta where [0, 1] allows (the shape that makes the EM ratio large)."""
    n = draw(st.integers(2, max_views))
    delta = draw(st.sampled_from((Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1))))
    room = int((1 - delta) * 12)  # grid points x/12 with x + 12 Delta <= 12
    favoured = draw(st.integers(0, n - 1))
    u = []
    u2 = []
    for k in range(n):
        low = Fraction(draw(st.integers(0, room)), 12)
        if k == favoured:  # up by Delta under M
            u.append(low + delta)
            u2.append(low)
        else:  # down by Delta under M
            u.append(low)
            u2.append(low + delta)
    eps = draw(st.sampled_from(EPSILONS))
    return tuple(u), tuple(u2), eps, delta
