"""Memory that grows: items in declared slot positions, tagged inside the trusted boundary."""

from __future__ import annotations

import attrs


@attrs.frozen
class MemoryEntry:
    """One memory item on the trusted side: id, slot, position, tags and text.

    Private: the repr shows the id and slot only, never text or tags."""

    item_id: str
    slot: str
    position: int
    tags: frozenset[str] = attrs.field(repr=False)
    text: str = attrs.field(repr=False)
