"""Generators aimed at the cases that decide the theorems.

The general `cases()` draw every shape, but rarely the ones where a theorem is tight or
a safeguard acts: a random multi-group pair is mostly uncoverable (kappa = inf), a random
horizon rarely exhausts a budget, and random score tables sit far below Delta. These
generators build those cases on purpose:

- `cover_pair_cases` (Corollary 1): each attribute owns a position no other group
  contains; M and M' differ at the own positions of a chosen cover C of 2-3 attributes
  (and possibly elsewhere inside the union of C's groups), so the minimum cover is C
  exactly: kappa = sum_{a in C} B_a is finite and needs several attributes. Every query
  reads a differing position, and the score rows there are at the sensitivity extreme,
  so the released views do depend on the difference (non-zero loss).
- `budget_cases` (Theorem 1): an adjacent pair for a target attribute whose differing
  positions carry extreme score rows (one favoured view scores 1 under M and 0 under M',
  every other view the reverse) while the rest of the target slot is level-constant, so
  the declared Delta is exactly the change a read sees; a vocabulary of up to 16 views
  (the per-step loss approaches eps as the vocabulary grows: 0.93 eps at 16 views);
  budgets of K = 1-3 charges with a horizon T >= max(3, K + 1), so the target ledger is
  exhausted and the next read falls back; strategies that react to fallbacks (`pivot`)
  or to the control. Every read is charged (an over-charge when it touches no group),
  which bounds the number of admitted selections on a path, hence the transcript tree.
- `near_bound_score_pairs` (per-step EM bound: u' = u moved by exactly Delta, in opposite
  directions for one view and the rest) lives beside `score_pairs` in `strategies.core`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from fractions import Fraction

from hypothesis import strategies as st

from dpmem_ref import (
    Attribute,
    FallbackControl,
    FixedRouter,
    Interface,
    Layout,
    NoControl,
    OnlineBudget,
    Policy,
    PreallocatedBudget,
    Query,
    SlotRead,
    Store,
)
from proofs_as_tests.strategies.cases import channels
from proofs_as_tests.strategies.core import (
    Case,
    budget_rules,
    vocabularies_for,
)
from proofs_as_tests.strategies.parts import (
    CAPS,
    TABLE_VALUES,
    BudgetStatusControl,
    QueryStrategy,
    TableScorer,
    ViewCountControl,
    exact_table_sensitivity,
    level_item,
    slot_name,
)

LEVELS = 2
Row = dict[str, tuple[Fraction, ...]]


def _flipped_pair(layout: Layout, base: dict[int, int], flipped: Collection[int]) -> tuple[Store, Store]:
    """M over the levels `base`, and M' with the level of every position in `flipped`
    toggled (0 <-> 1): the neighbouring stores differ exactly there."""
    other = {p: 1 - level if p in flipped else level for p, level in base.items()}
    store_a = Store.from_mapping(layout, {p: level_item(p, lv) for p, lv in base.items()}, name="M")
    return store_a, Store.from_mapping(layout, {p: level_item(p, lv) for p, lv in other.items()}, name="M'")


@st.composite
def _layout(draw: st.DrawFn, min_positions: int, max_positions: int = 6, max_slots: int = 3) -> Layout:
    n_slots = draw(st.integers(1, max_slots))
    n_positions = draw(st.integers(max(n_slots, min_positions), max(max_positions, min_positions)))
    extra = draw(st.lists(st.integers(0, n_slots - 1), min_size=n_positions - n_slots, max_size=n_positions - n_slots))
    return Layout(tuple(slot_name(k) for k in sorted(list(range(n_slots)) + extra)))


def _extreme_row(names: Sequence[str], favoured: int, base: int) -> Row:
    """Score row of a differing position: the favoured view scores 1 at the store's level
    `base` and 0 at the other, every other view the reverse (the sensitivity extreme)."""
    row = {}
    for k, name in enumerate(names):
        high = k == favoured
        row[name] = tuple(Fraction(int(high == (level == base))) for level in range(LEVELS))
    return row


def _scorer(
    draw: st.DrawFn,
    policy: Policy,
    vocabs: Sequence,
    queries: Sequence[Query],
    rows: dict[int, Row],
) -> TableScorer:
    """Random rows where `rows` has none; Delta the exact sup (Eq. 6), sometimes loosened."""
    by_slot = {v.slot: v for v in vocabs}
    table = dict(rows)
    for position in range(1, policy.layout.size + 1):
        if position not in table:
            names = by_slot[policy.layout.slot_of(position)].names
            table[position] = {n: tuple(draw(st.sampled_from(TABLE_VALUES)) for _ in range(LEVELS)) for n in names}
    loose = draw(st.integers(0, 3)) == 3  # Hypothesis favours small draws: 0 is the hard case
    sensitivities = []
    for vocabulary in vocabs:
        exact = exact_table_sensitivity(table, policy, queries, vocabulary)
        declared = exact if exact > 0 else Fraction(1)
        if loose:
            declared += Fraction(1, 4)
        sensitivities.append((vocabulary.slot, declared))
    frozen = tuple((p, tuple(sorted(row.items()))) for p, row in sorted(table.items()))
    return TableScorer(table=frozen, sensitivities=tuple(sensitivities), tight=not loose)


def _charged_read(policy: Policy, slot: str, positions: frozenset[int], fallback_attribute: str) -> SlotRead:
    """A read whose charge set is never empty: Gamma* (Eq. 4), or an over-charge (C2 allows
    supersets) when the read touches no group, so every admission spends budget."""
    charge = None if policy.gamma_star(positions) else frozenset({fallback_attribute})
    return SlotRead(slot=slot, positions=positions, charge=charge)


def _control(draw: st.DrawFn, generics: tuple[str, ...]) -> object:
    kind = draw(st.sampled_from(("fallback", "fallback", "budget", "none", "views")))
    return {
        "fallback": FallbackControl(),
        "none": NoControl(),
        "budget": BudgetStatusControl(),
        "views": ViewCountControl(generics=generics),
    }[kind]


@st.composite
def _strategy(draw: st.DrawFn, names: Sequence[str]) -> QueryStrategy:
    """Fixed on the first query, pivoting on fallbacks, or randomized on the control."""
    kind = draw(st.sampled_from(("fixed", "pivot", "pivot", "mixed")))
    if kind == "fixed" or len(names) == 1:
        return QueryStrategy(kind="fixed", sequence=(names[0],))
    if kind == "pivot":
        return QueryStrategy(kind="pivot", choices=tuple(names))
    rows = tuple(tuple(draw(st.integers(1, 3)) for _ in names) for _ in range(2))
    return QueryStrategy(kind="mixed", choices=tuple(names), signal="control", weights=rows)


def _max_admissions(interface: Interface, horizon: int) -> int:
    """Admitted selections on one path: each charges >= eps_min to some ledger that stays
    <= its cap, and a turn has at most as many selections as its query has slots."""
    epsilons = [interface.epsilon_for(r.charge if r.charge is not None else interface.policy.gamma_star(r.positions))
                for q in interface.queries for r in q.reads]
    eps_min = min(epsilons)
    by_budget = sum(int(a.cap / eps_min) for a in interface.policy.attributes)
    per_turn = max(len(q.reads) for q in interface.queries)
    return min(by_budget, horizon * per_turn)


def leaf_bound(interface: Interface, strategy: QueryStrategy, channel_kind: str, horizon: int) -> int:
    """An upper bound on the transcript tree's leaves (fallbacks do not branch)."""
    views = max(len(v.views) for v in interface.vocabularies)
    support = 1 if strategy.kind in ("fixed", "pivot") else len(set(strategy.choices))
    branch = support * (2 if channel_kind == "noisy" else 1)
    return int(views ** _max_admissions(interface, horizon) * branch**horizon)


@st.composite
def cover_pair_cases(draw: st.DrawFn, max_leaves: int = 400) -> Case:
    """Corollary 1: a store pair whose differences need a chosen cover of 2-3 attributes."""
    n_attributes = draw(st.integers(2, 3))
    layout = draw(_layout(min_positions=n_attributes, max_positions=7))
    positions = list(range(1, layout.size + 1))
    order = draw(st.permutations(positions))
    own = order[:n_attributes]
    shared = [p for p in positions if p not in own]
    groups = []
    for k in range(n_attributes):
        extra = draw(st.sets(st.sampled_from(shared), max_size=2)) if shared else set()
        groups.append(frozenset({own[k]} | extra))
    attributes = tuple(
        Attribute(name=f"a{k}", group=g, cap=draw(st.sampled_from(CAPS))) for k, g in enumerate(groups)
    )
    policy = Policy(layout=layout, attributes=attributes)
    cover_size = draw(st.integers(2, n_attributes))
    cover = sorted(draw(st.permutations(range(n_attributes)))[:cover_size])
    union = sorted(frozenset().union(*(groups[k] for k in cover)))
    differing = {own[k] for k in cover} | set(draw(st.sets(st.sampled_from(union), max_size=2)))

    vocabs = vocabularies_for(layout, [draw(st.integers(2, 4)) for _ in layout.slots])
    by_slot = {v.slot: v for v in vocabs}
    base = {p: draw(st.integers(0, LEVELS - 1)) for p in positions}
    rows: dict[int, Row] = {}
    for p in sorted(differing):
        names = by_slot[layout.slot_of(p)].names
        if draw(st.integers(0, 3)) != 3:
            rows[p] = _extreme_row(names, draw(st.integers(0, len(names) - 1)), base[p])
    queries = []
    for k in cover[:2]:
        slot = layout.slot_of(own[k])
        mates = sorted(layout.positions_of(slot))
        read_positions = frozenset({own[k]} | draw(st.sets(st.sampled_from(mates), max_size=2)))
        reads = [_charged_read(policy, slot, read_positions, f"a{k}")]
        other = layout.slot_of(own[cover[-1] if k == cover[0] else cover[0]])
        if other != slot and draw(st.booleans()):
            reads.append(_charged_read(policy, other, frozenset({own[cover[-1] if k == cover[0] else cover[0]]}), f"a{k}"))
        queries.append(Query(name=f"q{len(queries)}", text=f"query {len(queries)}", reads=tuple(reads)))
    queries_t = tuple(queries)
    scorer = _scorer(draw, policy, vocabs, queries_t, rows)
    generics = tuple(v.generic for v in vocabs)
    interface = Interface(
        policy=policy,
        vocabularies=vocabs,
        queries=queries_t,
        scorer=scorer,
        budget=draw(budget_rules(policy)),
        router=FixedRouter(),
        control=_control(draw, generics),
        name="cover-pair",
    )
    store_a, store_b = _flipped_pair(layout, base, differing)
    names = tuple(q.name for q in queries_t)
    strategy = draw(_strategy(names))
    channel = draw(channels())
    horizon = draw(st.integers(1, 3))
    while horizon > 1 and leaf_bound(interface, strategy, channel.kind, horizon) > max_leaves:
        horizon -= 1
    return Case(interface, store_a, store_b, None, strategy, channel, horizon)


@st.composite
def budget_cases(draw: st.DrawFn, max_leaves: int = 600) -> Case:
    """Theorem 1: an adjacent pair for `a0` at the sensitivity extreme, over a horizon
    that exhausts a0's budget, with strategies reacting to the fallback."""
    n_attributes = draw(st.integers(1, 3))
    layout = draw(_layout(min_positions=1, max_positions=6))
    positions = list(range(1, layout.size + 1))
    groups = [frozenset(draw(st.sets(st.sampled_from(positions), min_size=1, max_size=3))) for _ in range(n_attributes)]
    if not draw(st.booleans()):  # keep the target's first position out of the other groups
        keep = min(groups[0])
        groups = [groups[0]] + [g - {keep} or frozenset({p for p in positions if p != keep} or {keep})
                                for g in groups[1:]]
    attributes = tuple(
        Attribute(name=f"a{k}", group=g, cap=draw(st.sampled_from(CAPS))) for k, g in enumerate(groups)
    )
    policy = Policy(layout=layout, attributes=attributes)
    target = groups[0]
    first = min(target) if not draw(st.booleans()) else draw(st.sampled_from(sorted(target)))
    slot = layout.slot_of(first)
    mates = sorted(layout.positions_of(slot))
    changed = {first} | set(draw(st.sets(st.sampled_from(sorted(target & frozenset(mates))), max_size=1)))

    sizes = [draw(st.sampled_from((16, 16, 4, 2))) if s == slot else draw(st.integers(2, 3)) for s in layout.slots]
    vocabs = vocabularies_for(layout, sizes)
    target_names = vocabs[layout.slots.index(slot)].names
    base = {p: draw(st.integers(0, LEVELS - 1)) for p in positions}
    rows: dict[int, Row] = {}
    tight = draw(st.integers(0, 3)) != 3
    # Among the first four views: they survive if the enumeration bound cuts the vocabulary.
    favoured = draw(st.integers(0, min(len(target_names), 4) - 1))
    for p in mates:
        if p in changed and tight:
            rows[p] = _extreme_row(target_names, favoured, base[p])
        elif tight:  # level-constant: contributes nothing to Delta
            rows[p] = {n: (draw(st.sampled_from(TABLE_VALUES)),) * LEVELS for n in target_names}

    read = frozenset({first} | draw(st.sets(st.sampled_from(mates), max_size=2)))
    reads = [_charged_read(policy, slot, read, "a0")]
    other_slots = [s for s in dict.fromkeys(layout.slots) if s != slot]
    if other_slots and draw(st.integers(0, 3)) == 3:
        extra_slot = draw(st.sampled_from(other_slots))
        extra = frozenset({draw(st.sampled_from(sorted(layout.positions_of(extra_slot))))})
        reads.append(_charged_read(policy, extra_slot, extra, "a0"))
    queries = [Query(name="q0", text="query 0", reads=tuple(reads))]
    for k in range(draw(st.integers(0, 2))):  # pivot targets: reads elsewhere or narrower
        pivot_slot = draw(st.sampled_from(list(dict.fromkeys(layout.slots))))
        own = sorted(layout.positions_of(pivot_slot))
        pivot_read = frozenset(draw(st.sets(st.sampled_from(own), min_size=1, max_size=2)))
        attribute = draw(st.sampled_from(policy.attribute_names))
        queries.append(Query(name=f"q{k + 1}", text=f"query {k + 1}",
                             reads=(_charged_read(policy, pivot_slot, pivot_read, attribute),)))
    queries_t = tuple(queries)
    scorer = _scorer(draw, policy, vocabs, queries_t, rows)

    if draw(st.integers(0, 2)) != 2:
        budget: OnlineBudget | PreallocatedBudget = OnlineBudget(K=draw(st.sampled_from((1, 1, 2, 2, 3))))
        spend = budget.K
    else:
        plan = {a: draw(st.integers(1, 2)) for a in policy.attribute_names}
        budget = PreallocatedBudget.from_mapping(plan)
        spend = plan["a0"]
    generics = tuple(v.generic for v in vocabs)
    interface = Interface(
        policy=policy,
        vocabularies=vocabs,
        queries=queries_t,
        scorer=scorer,
        budget=budget,
        router=FixedRouter(),
        control=_control(draw, generics),
        name="budget-exhaustion",
    )
    store_a, store_b = _flipped_pair(layout, base, changed)
    strategy = draw(_strategy(tuple(q.name for q in queries_t)))
    channel = draw(channels())
    horizon = max(3, spend + 1) + draw(st.integers(0, 1))
    # Keep the exact enumeration small: fewer views in the target slot first, then a
    # shorter horizon (never below the one that exhausts the budget when avoidable).
    while leaf_bound(interface, strategy, channel.kind, horizon) > max_leaves:
        biggest = max(len(v.views) for v in interface.vocabularies)
        if biggest > 4:
            sizes = [min(n, 4) for n in sizes]
            interface = _with_vocabularies(interface, vocabularies_for(layout, sizes), draw)
        elif horizon > 1:
            horizon -= 1
        else:
            break
    return Case(interface, store_a, store_b, "a0", strategy, channel, horizon)


def _with_vocabularies(interface: Interface, vocabs: Sequence, draw: st.DrawFn) -> Interface:
    """The same interface over smaller vocabularies (score rows cut to the kept views)."""
    import attrs

    scorer = interface.scorer
    assert isinstance(scorer, TableScorer)
    by_slot = {v.slot: v for v in vocabs}
    table: dict[int, Row] = {}
    for position, row in scorer.table:
        keep = by_slot[interface.policy.layout.slot_of(position)].names
        table[position] = {name: values for name, values in row if name in keep}
    sensitivities = []
    for vocabulary in vocabs:
        exact = exact_table_sensitivity(table, interface.policy, interface.queries, vocabulary)
        declared = exact if exact > 0 else Fraction(1)
        sensitivities.append((vocabulary.slot, declared if scorer.tight else declared + Fraction(1, 4)))
    frozen = tuple((p, tuple(sorted(row.items()))) for p, row in sorted(table.items()))
    smaller = TableScorer(table=frozen, sensitivities=tuple(sensitivities), tight=scorer.tight)
    return attrs.evolve(interface, vocabularies=tuple(vocabs), scorer=smaller)
