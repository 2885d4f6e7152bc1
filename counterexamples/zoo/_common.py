"""Helpers shared by the mutant zoo."""

from __future__ import annotations

from typing import Any

from counterexamples.base import INDICATOR_SCORER, Construction, Setting, adjacent_pair, build_interface, read_query
from dpmem_ref.core.policy import Store
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.broken import PrivateHooks
from dpmem_ref.parts.budget import BudgetRule
from dpmem_ref.parts.protocols import CapRule, Selector
from dpmem_ref.parts.scoring import Scorer
from dpmem_ref.turn import InterfaceState, run_turn

__all__ = ["Construction", "admissions", "one_slot"]


def one_slot(
    name: str,
    setting: Setting,
    budget: BudgetRule,
    vocabulary: Vocabulary | None = None,
    scorer: Scorer = INDICATOR_SCORER,
    selector: Selector | None = None,
    cap_rule: CapRule | None = None,
    hooks: PrivateHooks | None = None,
) -> tuple[Interface, Store, Store]:
    parts: dict[str, Any] = {}
    if selector is not None:
        parts["selector"] = selector
    if cap_rule is not None:
        parts["cap_rule"] = cap_rule
    if hooks is not None:
        parts["hooks"] = hooks
    interface = build_interface(name, setting, (read_query(),), budget, vocabulary, scorer, **parts)
    store_a, store_b = adjacent_pair(interface.policy)
    return interface, store_a, store_b


def admissions(interface: Interface, store: Store, horizon: int) -> tuple[bool, ...]:
    """Admission decisions of the first query repeated `horizon` times (run_turn, strict=False)."""
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(0)
    decisions: list[bool] = []
    query = interface.queries[0]
    for _ in range(horizon):
        result = run_turn(interface, state, query, store, source, strict=False)
        state = result.state
        decisions.extend(result.record.admitted)
    return tuple(decisions)

