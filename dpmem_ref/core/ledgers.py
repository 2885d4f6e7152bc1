"""Exact ledgers: Fractions at the public boundary, integer counts on the hot path.

The public ledger vector is `Ledgers` = (L_a for a in policy order), exact Fractions.
The turn planner keeps the same values as ONE `LedgerVector`: integer counts over a common
denominator (`scale`), L_a = units_a / scale, exactly. Additions and the cap test L_a + eps <= B_a
are then integer operations (C5 stays exact: 2/3 + 2/3 + 2/3 is exactly 2). The scale is
the lcm of the caps' and the catalogue's eps denominators; an eps outside it (a custom
router or budget rule) widens the scale of that cursor, exactly, never rounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from math import gcd, lcm
from typing import NamedTuple

Ledgers = tuple[Fraction, ...]
Units = tuple[int, ...]


class LedgerVector(NamedTuple):
    """The turn planner's ONE ledger form: exact integer counts over a common denominator,
    L_a = units[a] / scale. The planner, its cursors, the states it builds and its slot
    plans carry this, never a loose (units, scale) pair; the Fraction view (`Ledgers`) is
    made at the public boundary (`FractionTable.ledgers`).

    A value: two vectors are equal when they are the same ledgers, over whatever scale
    (units_a * scale' == units'_a * scale), and hash alike then."""

    units: Units
    scale: int

    @classmethod
    def of(cls, ledgers: Ledgers, base_scale: int) -> LedgerVector:
        """`ledgers` as counts over the lcm of `base_scale` and their denominators (exact)."""
        scale = common_scale(base_scale, ledgers)
        return cls(to_units(ledgers, scale), scale)

    def widened(self, values: Iterable[Fraction]) -> LedgerVector:
        """The same ledgers over a scale that also holds every denominator of `values`
        (itself when the scale already does: nothing is ever rounded)."""
        scale = common_scale(self.scale, values)
        if scale == self.scale:
            return self
        factor = scale // self.scale
        return LedgerVector(tuple([count * factor for count in self.units]), scale)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LedgerVector):
            return NotImplemented
        if self.scale == other.scale:
            return self.units == other.units
        return len(self.units) == len(other.units) and all(
            a * other.scale == b * self.scale for a, b in zip(self.units, other.units, strict=True)
        )

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        divisor = gcd(self.scale, *self.units) or 1  # the lowest terms: one hash per value
        return hash((tuple(u // divisor for u in self.units), self.scale // divisor))


def common_scale(scale: int, values: Iterable[Fraction]) -> int:
    """lcm of `scale` and every value's denominator."""
    return lcm(scale, *[value.denominator for value in values])


def to_units(ledgers: Ledgers, scale: int) -> Units:
    """Integer counts of `ledgers` over `scale` (every denominator must divide it)."""
    return tuple([value.numerator * (scale // value.denominator) for value in ledgers])


class FractionTable:
    """One ledger scale: the caps as integer counts (`caps`, B_a * scale in policy order)
    and units -> Fraction(units, scale), cached (a ledger takes few distinct values)."""

    __slots__ = ("scale", "caps", "_table", "_vectors")

    def __init__(self, scale: int, caps: Iterable[Fraction]) -> None:
        self.scale = scale
        self.caps: Units = to_units(tuple(caps), scale)
        self._table: dict[int, Fraction] = {}
        self._vectors: dict[Units, tuple[Ledgers, LedgerVector]] = {}

    def __call__(self, count: int) -> Fraction:
        found = self._table.get(count)
        if found is None:
            found = Fraction(count, self.scale)
            if len(self._table) < 4096:
                self._table[count] = found
        return found

    def ledgers(self, units: Units) -> Ledgers:
        """The Fraction view of a ledger vector (cached per vector)."""
        found = self._vectors.get(units)
        if found is None:
            found = self.counted(units)
        return found[0]

    def counted(self, units: Units) -> tuple[Ledgers, LedgerVector]:
        """The Fraction view of a ledger vector and its counts over this scale (cached per
        vector, so a plan reuses them rather than building them again)."""
        found = self._vectors.get(units)
        if found is None:
            found = (tuple(map(self, units)), LedgerVector(units, self.scale))
            if len(self._vectors) < 65536:
                self._vectors[units] = found
        return found
