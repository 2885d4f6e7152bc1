"""Hypothesis generators for the proof suite, split by domain.

- `parts`: the parts of a generated deployment (table scorer, public history router,
  observable controls, LLM channel, adaptive query strategies) and the shared small values;
- `core`: the general generators (interfaces, stores, adjacent pairs, `score_pairs()`);
- `cases`: `cases()` over every supported shape, with the adaptive query strategies and
  LLM channels it draws;
- `hard`: generators aimed at the cases that decide the theorems: neighbouring stores
  built from a chosen multi-attribute cover (kappa finite, Corollary 1), horizons long
  enough to exhaust budgets, strategies that react to fallbacks, score rows at the
  sensitivity bound (Theorem 1 near B_a), and score pairs near Delta;
- `events`: the `event()` / `target()` vocabulary the property tests report, counted by
  `scripts/proof_coverage.py`.

Every public name stays importable from `proofs_as_tests.strategies`.
"""

from proofs_as_tests.strategies.cases import cases, channels, query_strategies, strategy_support
from proofs_as_tests.strategies.core import (
    TAGS,
    Case,
    budget_rules,
    layouts,
    linear_weights,
    policies,
    routes,
    score_pairs,
    table_scorers,
    tagged_vocabularies,
    vocabularies,
    vocabularies_for,
)
from proofs_as_tests.strategies.parts import (
    CAPS,
    EPSILONS,
    TABLE_VALUES,
    BudgetStatusControl,
    Channel,
    HistoryRouter,
    PublicTurn,
    QueryStrategy,
    TableScorer,
    ViewCountControl,
    exact_table_sensitivity,
    item_level,
    level_item,
    slot_name,
    stable_hash,
    view_name,
)

__all__ = [
    "CAPS",
    "EPSILONS",
    "TABLE_VALUES",
    "TAGS",
    "BudgetStatusControl",
    "Case",
    "Channel",
    "HistoryRouter",
    "PublicTurn",
    "QueryStrategy",
    "TableScorer",
    "ViewCountControl",
    "budget_rules",
    "cases",
    "channels",
    "exact_table_sensitivity",
    "item_level",
    "layouts",
    "level_item",
    "linear_weights",
    "policies",
    "query_strategies",
    "routes",
    "score_pairs",
    "slot_name",
    "stable_hash",
    "strategy_support",
    "table_scorers",
    "tagged_vocabularies",
    "view_name",
    "vocabularies",
    "vocabularies_for",
]
