"""Private memos of pure functions of an interface's frozen parts.

An `Interface` is frozen; everything here is a function of its parts (and of hashable,
cached-hash arguments), so caching never changes a value. The memo is a private field of
the interface, never part of its public surface, and every table is bounded.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, TypeVar

from dpmem_ref.core.ledgers import Units

MEMO_LIMIT = 100_000

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KernelMemo:
    """Bounded tables, each keyed one way: eps per charge set, charge plans per read, the
    caps as integer counts per ledger scale, the ledger scale, the static contract check,
    and the turn planner's own memos (`plans`: one `dpmem_ref.turn.caches.PlanCaches`, made
    by the planner on first use; core does not know its type)."""

    __slots__ = ("epsilon", "reads", "cap_units", "scale", "violations", "plans")

    def __init__(self) -> None:
        self.epsilon: dict[frozenset[str], Any] = {}
        self.reads: dict[Hashable, Any] = {}
        self.cap_units: dict[int, Units] = {}
        self.scale: int | None = None
        self.violations: tuple[Any, ...] | None = None
        self.plans: Any = None

    @staticmethod
    def put(table: dict[K, V], key: K, value: V) -> None:
        if len(table) < MEMO_LIMIT:
            table[key] = value
