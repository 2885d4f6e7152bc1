"""Exact ledgers: Fractions at the public boundary, integer counts on the hot path.

The public ledger vector is `Ledgers` = (L_a for a in policy order), exact Fractions.
The turn planner keeps the same values as integer counts over a common denominator
(`scale`): L_a = units_a / scale, exactly. Additions and the cap test L_a + eps <= B_a
are then integer operations (C5 stays exact: 2/3 + 2/3 + 2/3 is exactly 2). The scale is
the lcm of the caps' and the catalogue's eps denominators; an eps outside it (a custom
router or budget rule) widens the scale of that cursor, exactly, never rounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from math import lcm

Ledgers = tuple[Fraction, ...]
Units = tuple[int, ...]


def common_scale(scale: int, values: Iterable[Fraction]) -> int:
    """lcm of `scale` and every value's denominator."""
    return lcm(scale, *[value.denominator for value in values])


def to_units(ledgers: Ledgers, scale: int) -> Units:
    """Integer counts of `ledgers` over `scale` (every denominator must divide it)."""
    return tuple([value.numerator * (scale // value.denominator) for value in ledgers])


def rescale(units: Units, scale: int, new_scale: int) -> Units:
    """The same ledgers over `new_scale`, a multiple of `scale`."""
    factor = new_scale // scale
    return tuple(count * factor for count in units)


class FractionTable:
    """One ledger scale: the caps as integer counts (`caps`, B_a * scale in policy order)
    and units -> Fraction(units, scale), cached (a ledger takes few distinct values)."""

    __slots__ = ("scale", "caps", "_table", "_vectors")

    def __init__(self, scale: int, caps: Iterable[Fraction]) -> None:
        self.scale = scale
        self.caps: Units = to_units(tuple(caps), scale)
        self._table: dict[int, Fraction] = {}
        self._vectors: dict[Units, Ledgers] = {}

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
            found = tuple(map(self, units))
            if len(self._vectors) < 65536:
                self._vectors[units] = found
        return found
