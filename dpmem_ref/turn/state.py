"""What persists between turns: turn index, ledgers and the released history."""

from __future__ import annotations

from fractions import Fraction

import attrs

from dpmem_ref.core.interface import Interface
from dpmem_ref.core.ledgers import Ledgers
from dpmem_ref.core.transcript import TurnRecord


@attrs.frozen
class InterfaceState:
    """Everything that persists between turns: turn index, ledgers (L_a in policy order,
    the kernel's one ledger shape) and released history."""

    turn: int
    ledgers: Ledgers
    history: tuple[TurnRecord, ...]

    @classmethod
    def initial(cls, interface: Interface) -> InterfaceState:
        return cls(turn=0, ledgers=tuple(Fraction(0) for _ in interface.policy.attributes), history=())

    def ledger_map(self, interface: Interface) -> dict[str, Fraction]:
        """L_a by attribute name."""
        return dict(zip(interface.policy.attribute_names, self.ledgers, strict=True))
