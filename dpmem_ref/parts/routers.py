"""Routers: public slot activation and read sets (C4)."""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from dpmem_ref.core.transcript import PublicPrefix, Query, SlotRead, TurnRecord


@attrs.frozen
class FixedRouter:
    """Each query activates its declared slots in order, with fixed read sets; the history
    is not consulted, so the future depends on no part of it (state_key is constant)."""

    reads_released_views: bool = False
    reads_history: bool = False

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        return tuple(read.slot for read in query.reads)

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        return prefix.query.read_for(slot)

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        return ()
