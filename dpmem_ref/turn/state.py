"""What persists between turns: turn index, ledgers and the released history."""

from __future__ import annotations

from fractions import Fraction

import attrs

from dpmem_ref.core.ledgers import Ledgers, LedgerVector, exact_ledgers
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.interface import Interface


def _as_vector(ledgers: Ledgers | LedgerVector) -> LedgerVector:
    """The state's one conversion in: caller-given Fractions (checked exact here, InputError
    naming `state.ledgers`) as counts over their own common denominator; a `LedgerVector`
    (the kernel's states, `attrs.evolve`) as it is. Length and ranges are the interface's,
    checked where a turn opens (`dpmem_ref.turn.checks.require_state`)."""
    if type(ledgers) is LedgerVector:
        return ledgers
    return LedgerVector.of(exact_ledgers(ledgers, "state.ledgers"), 1)


@attrs.frozen(repr=False)
class InterfaceState:
    """Everything that persists between turns: turn index, ledgers (L_a in policy order)
    and released history.

    The ledgers are held as ONE `LedgerVector` (the planner's form); `ledgers` is their
    Fraction view. `InterfaceState(turn, ledgers, history)` takes exact Fractions (or a
    `LedgerVector`) and converts them once, here."""

    turn: int
    _vector: LedgerVector = attrs.field(alias="ledgers", converter=_as_vector)
    history: tuple[TurnRecord, ...]
    # True only for a state the kernel built (`planned`); never copied by attrs.evolve
    # (init=False) and never passed in by a caller (see `built_by_planner`).
    _planned: bool = attrs.field(init=False, default=False, eq=False)

    @property
    def ledgers(self) -> Ledgers:
        """L_a in policy order, exact Fractions (the vector's Fraction view)."""
        return self._vector.ledgers()

    def vector(self, base_scale: int) -> LedgerVector:
        """The ledgers as the planner's `LedgerVector`, over a multiple of `base_scale`."""
        vector = self._vector
        return vector if vector.scale % base_scale == 0 else vector.over(base_scale)

    @property
    def built_by_planner(self) -> bool:
        """True for a state the turn planner built (`TurnCursor.finish`): its history holds
        turn records the kernel wrote and its ledgers the planner's own counts (0 <= L_a <= B_a
        by construction, C5), so the public boundary need not re-check them."""
        return self._planned

    @classmethod
    def planned(cls, turn: int, history: tuple[TurnRecord, ...], vector: LedgerVector) -> InterfaceState:
        """A new state built by the kernel from the `LedgerVector` it already has. Kernel only
        (`TurnCursor.finish`, `initial`): such a state is trusted as `built_by_planner`; no
        existing state is ever changed."""
        state = cls(turn, vector, history)
        # attrs' own idiom for a frozen init=False field, on the object being constructed.
        object.__setattr__(state, "_planned", True)
        return state

    @classmethod
    def initial(cls, interface: Interface) -> InterfaceState:
        """Turn 0: L_a = 0 for every attribute, no history. Built by the kernel (zero counts,
        over scale 1), so a turn from it need not re-check its ledgers (0 <= 0 <= B_a)."""
        return cls.planned(0, (), LedgerVector((0,) * len(interface.policy.attributes), 1))

    def ledger_map(self, interface: Interface) -> dict[str, Fraction]:
        """L_a by attribute name."""
        return dict(zip(interface.policy.attribute_names, self.ledgers, strict=True))

    def __repr__(self) -> str:
        return f"InterfaceState(turn={self.turn!r}, ledgers={self.ledgers!r}, history={self.history!r})"
