"""What persists between turns: turn index, ledgers and the released history."""

from __future__ import annotations

from fractions import Fraction

import attrs

from dpmem_ref.core.ledgers import Ledgers, common_scale, to_units
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.interface import Interface


@attrs.frozen
class InterfaceState:
    """Everything that persists between turns: turn index, ledgers (L_a in policy order,
    the kernel's one ledger shape) and released history."""

    turn: int
    ledgers: Ledgers
    history: tuple[TurnRecord, ...]
    # The kernel's integer view of `ledgers` (units, scale), given only at construction by
    # `InterfaceState.planned` (the states the kernel builds); never copied by attrs.evolve
    # (init=False), so never stale, and never passed in by a caller (see `built_by_planner`).
    _units: tuple[tuple[int, ...], int] | None = attrs.field(init=False, default=None, eq=False, repr=False)

    def units(self, base_scale: int) -> tuple[tuple[int, ...], int]:
        """(units, scale) with L_a = units_a / scale, over a multiple of `base_scale`."""
        cached = self._units
        if cached is not None:
            if cached[1] % base_scale == 0:
                return cached
            if not any(cached[0]):  # zero ledgers: zero counts over base_scale (= common_scale's answer)
                return cached[0], base_scale
        scale = common_scale(base_scale, self.ledgers)
        return to_units(self.ledgers, scale), scale

    @property
    def built_by_planner(self) -> bool:
        """True for a state the turn planner built (`TurnCursor.finish`): its history holds
        turn records the kernel wrote, so the public boundary need not re-check them."""
        return self._units is not None

    @classmethod
    def planned(
        cls, turn: int, ledgers: Ledgers, history: tuple[TurnRecord, ...], units: tuple[int, ...], scale: int
    ) -> InterfaceState:
        """A new state built by the kernel, carrying the integer view it already has of its
        ledgers (L_a = units_a / scale). The view is part of the construction: the state is
        complete before it is returned, and no existing state is ever changed. Kernel only
        (`TurnCursor.finish`, `initial`): such a state is trusted as `built_by_planner`."""
        state = cls(turn, ledgers, history)
        # attrs' own idiom for a frozen init=False field, on the object being constructed.
        object.__setattr__(state, "_units", (units, scale))
        return state

    @classmethod
    def initial(cls, interface: Interface) -> InterfaceState:
        """Turn 0: L_a = 0 for every attribute, no history. Built by the kernel, so it carries
        its integer view (zero counts, over scale 1) like the states the planner builds: a
        turn from it need not re-check its ledgers (0 <= 0 <= B_a)."""
        ledgers = tuple(Fraction(0) for _ in interface.policy.attributes)
        return cls.planned(0, ledgers, (), (0,) * len(ledgers), 1)

    def ledger_map(self, interface: Interface) -> dict[str, Fraction]:
        """L_a by attribute name."""
        return dict(zip(interface.policy.attribute_names, self.ledgers, strict=True))
