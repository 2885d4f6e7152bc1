"""What persists between turns: turn index, ledgers and the released history."""

from __future__ import annotations

from fractions import Fraction

import attrs

from dpmem_ref.core.ledgers import Ledgers, LedgerVector
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.interface import Interface


@attrs.frozen
class InterfaceState:
    """Everything that persists between turns: turn index, ledgers (L_a in policy order,
    the kernel's one ledger shape) and released history."""

    turn: int
    ledgers: Ledgers
    history: tuple[TurnRecord, ...]
    # The planner's `LedgerVector` of `ledgers`, given only at construction by
    # `InterfaceState.planned` (the states the kernel builds); never copied by attrs.evolve
    # (init=False), so never stale, and never passed in by a caller (see `built_by_planner`).
    _vector: LedgerVector | None = attrs.field(init=False, default=None, eq=False, repr=False)

    def vector(self, base_scale: int) -> LedgerVector:
        """`ledgers` as the planner's `LedgerVector`, over a multiple of `base_scale`."""
        cached = self._vector
        if cached is not None:
            if cached.scale % base_scale == 0:
                return cached
            if not any(cached.units):  # zero ledgers: zero counts over base_scale (= LedgerVector.of's answer)
                return LedgerVector(cached.units, base_scale)
        return LedgerVector.of(self.ledgers, base_scale)

    @property
    def built_by_planner(self) -> bool:
        """True for a state the turn planner built (`TurnCursor.finish`): its history holds
        turn records the kernel wrote, so the public boundary need not re-check them."""
        return self._vector is not None

    @classmethod
    def planned(
        cls, turn: int, ledgers: Ledgers, history: tuple[TurnRecord, ...], vector: LedgerVector
    ) -> InterfaceState:
        """A new state built by the kernel, carrying the `LedgerVector` it already has of its
        ledgers. The vector is part of the construction: the state is complete before it is
        returned, and no existing state is ever changed. Kernel only (`TurnCursor.finish`,
        `initial`): such a state is trusted as `built_by_planner`."""
        state = cls(turn, ledgers, history)
        # attrs' own idiom for a frozen init=False field, on the object being constructed.
        object.__setattr__(state, "_vector", vector)
        return state

    @classmethod
    def initial(cls, interface: Interface) -> InterfaceState:
        """Turn 0: L_a = 0 for every attribute, no history. Built by the kernel, so it carries
        its integer view (zero counts, over scale 1) like the states the planner builds: a
        turn from it need not re-check its ledgers (0 <= 0 <= B_a)."""
        ledgers = tuple(Fraction(0) for _ in interface.policy.attributes)
        return cls.planned(0, ledgers, (), LedgerVector((0,) * len(ledgers), 1))

    def ledger_map(self, interface: Interface) -> dict[str, Fraction]:
        """L_a by attribute name."""
        return dict(zip(interface.policy.attribute_names, self.ledgers, strict=True))
