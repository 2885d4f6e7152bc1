"""Private memos of pure functions of an interface's frozen parts.

An `Interface` is frozen; everything here is a function of its parts (and of hashable,
cached-hash arguments), so caching never changes a value. The memo is a private field of
the interface, never part of its public surface, and every table is bounded.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from dpmem_ref.core.ledgers import Units

MEMO_LIMIT = 100_000


class KernelMemo:
    """Bounded tables, each keyed one way: eps per charge set, charge plans per read, routes
    (vocabulary, read, charge plan) per (query, slot) for routers that read neither history
    nor released views, active slots per query for routers that read no history, read-set
    items and their selections (scores and release law, per vocabulary) per (read, store
    object), the caps as integer counts per ledger scale, and the static contract check."""

    __slots__ = ("epsilon", "reads", "routes", "active_slots", "store_reads", "cap_units", "scale", "violations")

    def __init__(self) -> None:
        self.epsilon: dict[frozenset[str], Any] = {}
        self.reads: dict[Hashable, Any] = {}
        self.routes: dict[Hashable, Any] = {}
        self.active_slots: dict[Hashable, tuple[str, ...]] = {}
        self.store_reads: dict[Hashable, Any] = {}
        self.cap_units: dict[int, Units] = {}
        self.scale: int | None = None
        self.violations: tuple[Any, ...] | None = None

    @staticmethod
    def put(table: dict[Hashable, Any], key: Hashable, value: Any) -> None:
        if len(table) < MEMO_LIMIT:
            table[key] = value
