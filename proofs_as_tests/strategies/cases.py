"""The case generator of the proof suite (`cases()`: a complete finite deployment and a store
pair, see `proofs_as_tests.strategies.core` for what a `Case` holds) and the adaptive play it
draws: query strategies (fixed, reactive, randomized) and LLM channels."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import attrs
from hypothesis import strategies as st

from dpmem_ref import (
    FallbackControl,
    FixedRouter,
    Interface,
    LinearTagScorer,
    MemoryItem,
    NoControl,
    Query,
    Store,
)
from proofs_as_tests.strategies.core import (
    TAGS,
    Case,
    budget_rules,
    layouts,
    linear_weights,
    policies,
    routes,
    table_scorers,
    tagged_vocabularies,
    vocabularies_for,
)
from proofs_as_tests.strategies.parts import (
    BudgetStatusControl,
    Channel,
    HistoryRouter,
    QueryStrategy,
    ViewCountControl,
    level_item,
)


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
