"""The part protocols of Algorithm 1 and the capabilities every implementation declares.

Capabilities are class-level attributes that every implementation states (the way
dp_accounting's accountants declare `supports(event)`); the kernel and the exact engine
read them directly and never guess with getattr or isinstance lists:

- every part: `name`, and `violates` (the condition C1-C6 it breaks, or None);
- Router: `reads_history`, `reads_released_views` (what routing depends on besides q_t);
- Selector: `exponential_mechanism` (True iff `distribution` is Eq. 7);
- CapRule: `prospective` (True iff `admits` is exactly L_a + eps <= B_a for every charged
  a, Algorithm 1 line 9: the kernel may then decide admission on exact integer ledgers);
- ControlRule: `reads_private` (read items/scores, a C6 breach), `reads_views` (released
  views), `reads_history` (earlier turns).

The contract suites in tests/parts/test_parts_contract.py check every implementation.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Protocol

import attrs

from dpmem_ref.core.policy import MemoryItem
from dpmem_ref.core.transcript import PublicPrefix, Query, ReleasedViews, SlotRead, TurnRecord
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.mechanism.em import ReleaseDistribution


class Router(Protocol):
    """Slot(q, history) and ReadPolicy(q, g, h): public orchestration (C4)."""

    @property
    def reads_history(self) -> bool: ...

    @property
    def reads_released_views(self) -> bool: ...

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]: ...

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead: ...

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        """The part of the history that future routing depends on (for exact audits)."""
        ...


class Selector(Protocol):
    """How an admitted selection picks a view. Only the EM satisfies C3."""

    @property
    def name(self) -> str: ...

    @property
    def violates(self) -> str | None: ...

    @property
    def exponential_mechanism(self) -> bool: ...

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ReleaseDistribution: ...


class CapRule(Protocol):
    """The admission test before a charged selection (C5)."""

    @property
    def name(self) -> str: ...

    @property
    def violates(self) -> str | None: ...

    @property
    def prospective(self) -> bool: ...

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool: ...


@attrs.frozen
class ControlContext:
    """Public inputs of the observable control c_t (C6): query, released views, history,
    and the ledger state induced by that history."""

    query: Query
    views: ReleasedViews
    admitted: tuple[bool, ...]
    history: tuple[TurnRecord, ...]
    ledgers: tuple[tuple[str, Fraction], ...]
    caps: tuple[tuple[str, Fraction], ...]
    # Per slot: True when the view was re-served by the reuse rule (public: a function of
    # the released history, dpmem_ref.parts.reuse); empty means none was.
    reused: tuple[bool, ...] = ()


@attrs.frozen(repr=False)
class PrivateTurnData:
    """What a *broken* control may peek at: read items and internal scores per slot."""

    items: tuple[tuple[MemoryItem, ...], ...]
    scores: tuple[tuple[Fraction, ...] | None, ...]
    vocabularies: tuple[Vocabulary, ...]

    def __repr__(self) -> str:
        return "PrivateTurnData(<private>)"


class ControlRule(Protocol):
    """c_t (Algorithm 1, line 19)."""

    @property
    def name(self) -> str: ...

    @property
    def violates(self) -> str | None: ...

    @property
    def reads_private(self) -> bool: ...

    @property
    def reads_views(self) -> bool: ...

    @property
    def reads_history(self) -> bool: ...

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable: ...
