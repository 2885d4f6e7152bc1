"""Tiny fixtures for the pipeline tests: a 4-position policy in the shape of the paper's
Figure 2 (health, food x2, finance; diabetes I={1,2,3}, debt I={3,4}, position 3 shared)
and one adjacent pair (M ~_diabetes M'). Records duck-type the data package's records."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dpmem_eval.pipeline.methods import PublicPolicy


@dataclass(frozen=True)
class Item:
    tags: tuple[str, ...]
    text: str
    source: str = "fixture"


@dataclass(frozen=True)
class V:
    name: str
    text: str
    compatible: tuple[str, ...] = ()
    specific: tuple[str, ...] = ()


@dataclass(frozen=True)
class Q:
    query_id: str
    kind: str
    family: str
    slot: str
    read_positions: tuple[int, ...]
    text: str
    block: int = 1


@dataclass(frozen=True)
class G:
    query_id: str
    target_required: tuple[str, ...]
    unsupported_target_specific: tuple[str, ...]


@dataclass(frozen=True)
class Pair:
    pair_id: str
    track: str
    attribute: str
    split: str
    groups: tuple[tuple[str, tuple[int, ...]], ...]
    target_positions: tuple[int, ...]
    store_m: tuple[Item, ...]
    store_m_prime: tuple[Item, ...]
    queries: tuple[Q, ...]
    gold: tuple[G, ...]


VIEWS = {
    "health": (V("health-generic", "Give general, widely applicable health information."),
               V("blood-sugar-conscious", "Favour blood-sugar-conscious advice.", ("blood-sugar",), ("blood-sugar", "medication"))),
    "food": (V("balanced-meals", "Suggest balanced, everyday meals."),
             V("low-glycemic", "Prefer low-glycemic meals.", ("blood-sugar",), ("blood-sugar", "carb-counting")),
             V("budget-friendly", "Prefer low-cost meals.", ("tight-budget",), ("tight-budget",))),
    "finance": (V("finance-generic", "Give general money tips."),
                V("strict-budget", "Keep within a strict budget.", ("tight-budget", "debt-repayment"), ("debt-repayment",))),
}

TINY_POLICY = PublicPolicy(
    layout=("health", "food", "food", "finance"),
    views=VIEWS,
    relevance={"dinner": (("low-glycemic", "1/2"), ("budget-friendly", "1")), "money": (("strict-budget", "1"),),
               "checkup": (("blood-sugar-conscious", "1"),), "snack": (("low-glycemic", "1"),)},
    protected_terms={"diabetes": ("diabetes", "diabetic", "metformin", "glucose"), "debt": ("debt", "credit card")},
)

STORE_M = (
    Item(("blood-sugar", "medication"), "I take metformin every morning."),
    Item(("blood-sugar", "carb-counting"), "I count carbs at every meal."),
    Item(("blood-sugar", "tight-budget"), "I check my glucose and money is tight when I shop."),
    Item(("debt-repayment",), "I am paying off a large credit-card balance."),
)
STORE_M_PRIME = (
    Item((), "I take a vitamin every morning."),
    Item((), "I like trying new recipes."),
    Item(("tight-budget",), "Money is tight when I shop."),
    STORE_M[3],
)

QUERIES = (
    Q("p1-01", "target", "dinner", "food", (2, 3), "Can you suggest an affordable dinner?"),
    Q("p1-02", "neutral", "money", "finance", (4,), "How should I plan my spending this month?"),
    Q("p1-03", "target", "checkup", "health", (1,), "What should I mention at my check-up?"),
    Q("p1-04", "distractor", "snack", "food", (3,), "What is a good snack?"),
)
GOLD = (
    G("p1-01", ("suggests low-glycemic dinners",), ("suggests low-glycemic dinners",)),
    G("p1-02", (), ()),
    G("p1-03", ("mentions blood-sugar readings",), ("mentions blood-sugar readings",)),
    G("p1-04", (), ()),
)


def make_pair(pair_id: str = "p1", split: str = "test", track: str = "pairedmem") -> Pair:
    queries = tuple(Q(f"{pair_id}-{q.query_id[3:]}", q.kind, q.family, q.slot, q.read_positions, q.text) for q in QUERIES)
    gold = tuple(G(f"{pair_id}-{g.query_id[3:]}", g.target_required, g.unsupported_target_specific) for g in GOLD)
    return Pair(pair_id, track, "diabetes", split, (("debt", (3, 4)), ("diabetes", (1, 2, 3))), (1, 2, 3),
                STORE_M, STORE_M_PRIME, queries, gold)


@pytest.fixture
def policy() -> PublicPolicy:
    return TINY_POLICY


@pytest.fixture
def pair() -> Pair:
    return make_pair()
