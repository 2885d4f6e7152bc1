"""Budget rules: the local privacy parameter eps_{t,g} of a charged selection.

Both rules are functions of public inputs only (C4): the charge set, the caps and a
precommitted public plan. One small interface, one shared contract suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Protocol

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_int


class BudgetRule(Protocol):
    @property
    def name(self) -> str: ...

    def epsilon(self, charge_set: frozenset[str], caps: Mapping[str, Fraction]) -> Fraction:
        """eps_{t,g} > 0 for a selection charged to `charge_set` (non-empty)."""


def _require_charge_set(charge_set: frozenset[str], caps: Mapping[str, Fraction]) -> None:
    if not charge_set:
        raise InputError("charge set", "a non-empty set of attributes", "{}")
    unknown = sorted(charge_set - set(caps))
    if unknown:
        raise InputError("charge set", f"attributes among {sorted(caps)}", unknown)


@attrs.frozen
class OnlineBudget:
    """Online allocation: eps = min_{a in Gamma} B_a / K (paper, Query and budget protocol)."""

    K: int
    name: str = "online"

    def __attrs_post_init__(self) -> None:
        check_int(self.K, "budget.K", low=1)

    def epsilon(self, charge_set: frozenset[str], caps: Mapping[str, Fraction]) -> Fraction:
        _require_charge_set(charge_set, caps)
        return min(caps[a] for a in charge_set) / self.K


@attrs.frozen
class PreallocatedBudget:
    """Preallocation: eps = min_{a in Gamma} B_a / C_a over a precommitted public plan C_a."""

    plan: tuple[tuple[str, int], ...]
    name: str = "preallocated"

    def __attrs_post_init__(self) -> None:
        for attribute, count in self.plan:
            check_int(count, f"budget.plan.{attribute}", low=1, expected="a positive integer count")

    @classmethod
    def from_mapping(cls, plan: Mapping[str, int]) -> PreallocatedBudget:
        return cls(plan=tuple(sorted(plan.items())))

    def epsilon(self, charge_set: frozenset[str], caps: Mapping[str, Fraction]) -> Fraction:
        _require_charge_set(charge_set, caps)
        counts = dict(self.plan)
        missing = sorted(a for a in charge_set if a not in counts)
        if missing:
            raise InputError(
                "budget.plan",
                f"a planned count for every charged attribute {sorted(charge_set)}",
                f"none for {missing}",
            )
        return min(caps[a] / counts[a] for a in charge_set)
