"""C5's ledger invariant, proved exhaustively over the kernel's own code path.

`test_z3_ledger_invariant.py` proves the inductive step for an abstract model of the
prospective check. Here the step is the kernel's: `plan_slot` (Algorithm 1, lines 5-16)
with the interface's own budget rule (`BudgetRule.epsilon`, via `Interface.epsilon_for`)
and cap rule (`CapRule.admits`), run with strict=False so the C5 assertion inside the
kernel cannot be what keeps the ledgers below their caps.

For each configuration (1-3 attributes, caps, an online or preallocated budget rule),
every eps the rule can produce is a multiple of 1/d, d the common denominator of all
eps and caps. Every ledger state reachable from L = 0 therefore lies on the finite grid
{0, 1/d, ..., B_a}^A. For EVERY grid state and EVERY non-empty charge set Gamma (a read
of exactly the positions of Gamma's groups), the kernel's step
- keeps L_a' <= B_a for every a (the invariant: induction over turns, any horizon),
- lands on the grid again (closure: the induction stays inside the enumerated set),
- admits iff L_a + eps <= B_a for every charged a (no admissible charge is lost),
- moves exactly the charged ledgers, by exactly eps, and nothing on a fallback.
Twin: the same enumeration over `NoCap` finds a state whose step overshoots a cap.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations, product

import pytest

from dpmem_ref import (
    Attribute,
    FunctionScorer,
    Interface,
    Layout,
    MemoryItem,
    NoCap,
    OnlineBudget,
    Policy,
    PreallocatedBudget,
    PublicPrefix,
    Query,
    SlotRead,
    Store,
    View,
    Vocabulary,
    plan_slot,
)

CONFIGS = [
    # (caps, budget rule)
    ((Fraction(2),), OnlineBudget(K=3)),
    ((Fraction(1, 2),), OnlineBudget(K=1)),
    ((Fraction(3, 2),), PreallocatedBudget.from_mapping({"a0": 4})),
    ((Fraction(1), Fraction(2)), OnlineBudget(K=2)),
    ((Fraction(2), Fraction(2, 3)), OnlineBudget(K=3)),
    ((Fraction(1), Fraction(3, 2)), PreallocatedBudget.from_mapping({"a0": 2, "a1": 3})),
    ((Fraction(1), Fraction(1, 2), Fraction(3, 2)), OnlineBudget(K=2)),
    ((Fraction(2), Fraction(1), Fraction(1, 2)), PreallocatedBudget.from_mapping({"a0": 3, "a1": 1, "a2": 2})),
]


def build(caps: tuple[Fraction, ...], budget, cap_rule=None) -> Interface:
    """One slot, position k+1 is attribute a_k's whole group; one query per charge set."""
    n = len(caps)
    layout = Layout(("g",) * n)
    attributes = tuple(Attribute(f"a{k}", frozenset({k + 1}), cap) for k, cap in enumerate(caps))
    vocabulary = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    queries = []
    for size in range(1, n + 1):
        for subset in combinations(range(n), size):
            name = "q" + "".join(str(k) for k in subset)
            queries.append(Query(name, name, (SlotRead("g", frozenset(k + 1 for k in subset)),)))
    interface = Interface(
        policy=Policy(layout, attributes),
        vocabularies=(vocabulary,),
        queries=tuple(queries),
        scorer=FunctionScorer(lambda relevance, vocab, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=budget,
    )
    if cap_rule is not None:
        import attrs

        interface = attrs.evolve(interface, cap_rule=cap_rule)
    return interface


def grid(interface: Interface) -> tuple[int, list[tuple[Fraction, ...]]]:
    """The common denominator d and every ledger vector on {0, 1/d, ..., B_a}^A."""
    caps = [a.cap for a in interface.policy.attributes]
    epsilons = [interface.epsilon_for(q.reads[0].charge or interface.policy.gamma_star(q.reads[0].positions))
                for q in interface.queries]
    d = math.lcm(*(x.denominator for x in caps + epsilons))
    axes = [[Fraction(k, d) for k in range(int(cap * d) + 1)] for cap in caps]
    return d, list(product(*axes))


def step(interface: Interface, store: Store, ledgers: tuple[Fraction, ...], query: Query):
    prefix = PublicPrefix(history=(), query=query, released=())
    return plan_slot(interface, ledgers, prefix, "g", store, strict=False)


@pytest.mark.parametrize(("caps", "budget"), CONFIGS, ids=lambda x: str(x))
def test_kernel_step_keeps_every_ledger_below_its_cap(caps, budget):
    interface = build(caps, budget)
    store = Store.from_mapping(interface.policy.layout, {k + 1: MemoryItem(frozenset()) for k in range(len(caps))})
    names = interface.policy.attribute_names
    d, states = grid(interface)
    checked = 0
    for query in interface.queries:
        charged = interface.policy.gamma_star(query.reads[0].positions)
        for ledgers in states:
            plan = step(interface, store, ledgers, query)
            eps = plan.epsilon
            assert eps == budget.epsilon(charged, interface.caps) and eps > 0
            fits = all(ledgers[names.index(a)] + eps <= interface.caps[a] for a in charged)
            assert plan.admitted == fits, (ledgers, sorted(charged), eps)
            for name, before, after, cap in zip(names, ledgers, plan.ledgers_after, caps, strict=True):
                assert after <= cap, f"{name}: {before} -> {after} > {cap}"
                assert (after * d).denominator == 1  # closure: still on the grid
                assert after == (before + eps if plan.admitted and name in charged else before)
            checked += 1
    assert checked == len(states) * len(interface.queries)


@pytest.mark.parametrize(("caps", "budget"), CONFIGS[:4], ids=lambda x: str(x))
def test_without_the_cap_rule_some_state_overshoots(caps, budget):
    interface = build(caps, budget, cap_rule=NoCap())
    store = Store.from_mapping(interface.policy.layout, {k + 1: MemoryItem(frozenset()) for k in range(len(caps))})
    _, states = grid(interface)
    overshoot = [
        (ledgers, query.name)
        for query in interface.queries
        for ledgers in states
        if any(after > cap for after, cap in zip(step(interface, store, ledgers, query).ledgers_after, caps, strict=True))
    ]
    assert overshoot  # the invariant comes from the cap rule, not from the grid
