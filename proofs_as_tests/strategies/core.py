"""Hypothesis generators for the proof suite: interfaces, stores, adjacent pairs,
adaptive strategies, LLM channels and observable controls.

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
    FallbackControl,
    FixedRouter,
    Interface,
    Layout,
    LinearTagScorer,
    LinearWeights,
    MemoryItem,
    NoControl,
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
    BudgetStatusControl,
    Channel,
    HistoryRouter,
    QueryStrategy,
    TableScorer,
    ViewCountControl,
    exact_table_sensitivity,
    level_item,
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


@st.composite
def cases(
    draw: st.DrawFn,
    multi_group: bool = False,
    adaptive: bool = True,
    max_leaves: int = 300,
    max_horizon: int = 3,
) -> Case:
    """A complete finite deployment and a store pair.

    multi_group=False: an adjacent pair M ~_a M' for a chosen attribute a (differences
    inside I_a only). multi_group=True: differences across several groups, and with some
    probability at a position outside every group (no cover: kappa = inf).
    The horizon is the largest T <= max_horizon whose transcript tree stays below
    max_leaves (so the exact enumeration stays fast).
    """
    layout = draw(layouts())
    policy = draw(policies(layout))
    queries = draw(routes(policy))
    sizes = [draw(st.integers(2, 4)) for _ in layout.slots]
    router_kind = draw(st.sampled_from(("fixed", "history"))) if adaptive else "fixed"
    scorer_kind = draw(st.sampled_from(("table", "linear")))
    if scorer_kind == "table":
        vocabs = vocabularies_for(layout, sizes)
        levels = draw(st.integers(2, 3))
        scorer = draw(table_scorers(policy, vocabs, queries, levels, router_kind == "history"))

        def content() -> st.SearchStrategy[int]:
            return st.integers(0, levels - 1)

        make_item = level_item
    else:
        tag_sets = st.frozensets(st.sampled_from(TAGS), max_size=2)
        compat = [[draw(tag_sets) for _ in range(size - 1)] for size in sizes]
        spec = [[draw(tag_sets) for _ in range(size - 1)] for size in sizes]
        vocabs = tagged_vocabularies(layout, sizes, compat, spec)
        weights = draw(linear_weights())
        probe = LinearTagScorer(weights=weights)
        exact = max(probe.exact_sensitivity(v) for v in vocabs)
        declared = exact if exact > 0 else Fraction(1)
        if draw(st.booleans()):
            declared += Fraction(1, 5)
        scorer = LinearTagScorer(weights=weights, declared_sensitivity=declared)
        subsets = [frozenset(s) for s in ((), ("t0",), ("t1",), ("t0", "t1"), ("t2",), TAGS)]

        def content() -> st.SearchStrategy[int]:
            return st.integers(0, len(subsets) - 1)

        def make_item(position: int, level: int) -> MemoryItem:
            return MemoryItem(tags=subsets[level], text=f"p{position}=s{level}")

    # Relevance: public, per view, in [0, 1] (read by the linear scorer only).
    queries = tuple(
        attrs.evolve(
            q,
            reads=tuple(
                attrs.evolve(
                    r,
                    relevance=tuple(
                        (name, draw(st.sampled_from((Fraction(0), Fraction(1, 2), Fraction(1)))))
                        for name in next(v for v in vocabs if v.slot == r.slot).names[1:]
                    ),
                )
                for r in q.reads
            ),
        )
        for q in queries
    ) if scorer_kind == "linear" else queries
    generics = tuple(v.generic for v in vocabs)
    control_kind = draw(st.sampled_from(("fallback", "none", "budget", "views")))
    control = {
        "fallback": FallbackControl(),
        "none": NoControl(),
        "budget": BudgetStatusControl(),
        "views": ViewCountControl(generics=generics),
    }[control_kind]
    router = HistoryRouter(generics=generics) if router_kind == "history" else FixedRouter()
    interface = Interface(
        policy=policy,
        vocabularies=vocabs,
        queries=queries,
        scorer=scorer,
        budget=draw(budget_rules(policy)),
        router=router,
        control=control,
        name="generated",
    )
    # Stores.
    base = {p: draw(content()) for p in range(1, layout.size + 1)}
    store_a = Store.from_mapping(layout, {p: make_item(p, lv) for p, lv in base.items()}, name="M")
    if multi_group:
        attribute = None
        changed = set(draw(st.sets(st.sampled_from(list(base)), min_size=1, max_size=layout.size)))
    else:
        # Prefer an attribute some read touches, and always change a read position of
        # its group when there is one: otherwise the pair is trivially indistinguishable.
        reads = frozenset().union(*(r.positions for q in queries for r in q.reads))
        touched = [a for a in policy.attribute_names if policy.attribute(a).group & reads]
        attribute = draw(st.sampled_from(touched or list(policy.attribute_names)))
        group = sorted(policy.attribute(attribute).group)
        changed = set(draw(st.sets(st.sampled_from(group), min_size=1, max_size=len(group))))
        hit = sorted(policy.attribute(attribute).group & reads)
        if hit:
            changed.add(draw(st.sampled_from(hit)))
    other = dict(base)
    for p in changed:
        other[p] = draw(content().filter(lambda lv, p=p: lv != base[p]))
    store_b = Store.from_mapping(layout, {p: make_item(p, lv) for p, lv in other.items()}, name="M'")
    names = tuple(q.name for q in queries)
    strategy = draw(query_strategies(names, adaptive=adaptive))
    channel = draw(channels())
    # Horizon: keep the transcript tree small.
    per_turn = max(_branching(interface, q) for q in queries) * len(strategy_support(strategy, names))
    per_turn *= 2 if channel.kind == "noisy" else 1
    horizon = 1
    wanted = draw(st.integers(1, max_horizon))
    while horizon < wanted and per_turn ** (horizon + 1) <= max_leaves:
        horizon += 1
    return Case(interface, store_a, store_b, attribute, strategy, channel, horizon)


def _branching(interface: Interface, query: Query) -> int:
    total = 1
    for read in query.reads:
        total *= len(interface.vocabulary(read.slot).views)
    return total


def strategy_support(strategy: QueryStrategy, names: Sequence[str]) -> tuple[str, ...]:
    """The queries the strategy may play at one turn (its branching in the transcript tree)."""
    if strategy.kind == "fixed":
        return (strategy.sequence[0],)
    if strategy.kind == "react":
        return (strategy.choices[0],)
    if strategy.kind == "pivot":
        return (strategy.choices[0],)
    return tuple(dict.fromkeys(strategy.choices))


@st.composite
def query_strategies(draw: st.DrawFn, names: Sequence[str], adaptive: bool = True) -> QueryStrategy:
    """Fixed sequences, deterministic reactive strategies, randomized strategies."""
    kinds = ("fixed", "react", "mixed", "pivot") if adaptive else ("fixed",)
    kind = draw(st.sampled_from(kinds))
    if kind == "fixed":
        return QueryStrategy(kind="fixed", sequence=tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))))
    choices = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=2)))
    if kind == "pivot":
        return QueryStrategy(kind="pivot", choices=choices)
    signal = draw(st.sampled_from(("views", "control", "response")))
    if kind == "react":
        return QueryStrategy(kind="react", choices=choices, signal=signal)
    rows = tuple(
        tuple(draw(st.lists(st.integers(0, 3), min_size=len(choices), max_size=len(choices)).filter(any)))
        for _ in range(2)
    )
    return QueryStrategy(kind="mixed", choices=choices, signal=signal, weights=rows)


@st.composite
def channels(draw: st.DrawFn) -> Channel:
    kind = draw(st.sampled_from(("constant", "echo", "noisy")))
    flip = draw(st.sampled_from((Fraction(1, 4), Fraction(1, 3)))) if kind == "noisy" else Fraction(0)
    return Channel(kind=kind, flip=flip, seed=draw(st.integers(0, 3)))


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
