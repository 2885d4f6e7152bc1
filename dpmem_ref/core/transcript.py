"""Transcript types: the query catalogue's rows, turn records and the public prefix.

Everything here is public. `PublicPrefix` holds no store and no score: every function
of a PublicPrefix is public (C4) - that is the C4 argument in types.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from fractions import Fraction
from types import MappingProxyType

import attrs

from dpmem_ref.core.errors import InputError

ReleasedViews = tuple[tuple[str, str], ...]
"""The views released so far in a turn (or in a whole turn): (slot, view name) pairs in release order."""


def _relevance_items(
    value: Mapping[str, Fraction] | tuple[tuple[str, Fraction], ...],
) -> tuple[tuple[str, Fraction], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted(items))


@attrs.frozen(cache_hash=True)
class SlotRead:
    """One active slot of a query: its read set R_{t,g}, public relevance r(q, v) and an
    optional declared charge set (None means the minimal sound Gamma*(R), Eq. 4)."""

    slot: str
    positions: frozenset[int]
    relevance: tuple[tuple[str, Fraction], ...] = attrs.field(default=(), converter=_relevance_items)
    charge: frozenset[str] | None = None
    _relevance_map: Mapping[str, Fraction] = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_relevance_map", MappingProxyType(dict(self.relevance)))

    @property
    def relevance_map(self) -> Mapping[str, Fraction]:
        return self._relevance_map


@attrs.frozen(cache_hash=True)
class Query:
    """A public query q_t and the ordered slots it activates (the router's table row)."""

    name: str
    text: str
    reads: tuple[SlotRead, ...]

    def read_for(self, slot: str) -> SlotRead:
        for read in self.reads:
            if read.slot == slot:
                return read
        raise InputError(f"queries.{self.name}", f"a read for slot {slot!r}", [r.slot for r in self.reads])


@attrs.frozen
class TurnRecord:
    """One turn of the augmented transcript (q_t, v_t, c_t, y_t) (Eq. 1), plus the public
    accounting facts that follow from the public prefix (charge sets, eps, admission)."""

    query: str
    views: ReleasedViews
    control: Hashable
    response: str
    admitted: tuple[bool, ...]
    charges: tuple[tuple[str, frozenset[str], Fraction], ...]

    def ordinary(self) -> tuple[str, Hashable, str]:
        """The application-facing projection (q_t, c_t, y_t)."""
        return (self.query, self.control, self.response)


@attrs.frozen
class PublicPrefix:
    """h_{t,j}: completed history, current query, views released earlier this turn.

    Holds no store and no score: every function of a PublicPrefix is public (C4).
    """

    history: tuple[TurnRecord, ...]
    query: Query
    released: ReleasedViews = ()
