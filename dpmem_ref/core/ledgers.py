"""Exact ledgers: Fractions at the public boundary, integer counts everywhere inside.

The public ledger vector is `Ledgers` = (L_a for a in policy order), exact Fractions.
The turn planner, its slot plans and the states it builds keep the same values as ONE
`LedgerVector`: integer counts over a common denominator (`scale`), L_a = units_a / scale,
exactly. Additions and the cap test L_a + eps <= B_a are then integer operations (C5 stays
exact: 2/3 + 2/3 + 2/3 is exactly 2). The scale is the lcm of the caps' and the catalogue's
eps denominators; an eps outside it (a custom router or budget rule) widens the scale of that
cursor, exactly, never rounds.

One conversion each way: `exact_ledgers` then `LedgerVector.of` (caller-given values in) and
`LedgerVector.ledgers` (Fractions out, for users, records, controls and the ledger store).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from functools import lru_cache
from math import gcd, lcm
from typing import NamedTuple

from dpmem_ref.core.errors import InputError

Ledgers = tuple[Fraction, ...]
Units = tuple[int, ...]

EXACT = "an exact rational (Fraction or int)"


def exact_ledgers(ledgers: object, field: str, expected: int | None = None) -> Ledgers:
    """Caller-given ledgers as a tuple of exact Fractions, refused with InputError naming
    `field` otherwise: a tuple or list (of `expected` values when given) of Fractions or
    ints; never bool, float (0.1 is not 1/10), Decimal, str or a numpy scalar (an
    exact-looking value of another type would fail deep in the integer ledgers)."""
    if type(ledgers) is tuple and (expected is None or len(ledgers) == expected):  # the kernel's own form: one pass
        for value in ledgers:
            if type(value) is not Fraction:
                break
        else:
            return ledgers
    if not isinstance(ledgers, tuple | list):
        raise InputError(field, "a tuple of exact rationals, one per attribute in policy order", type(ledgers).__name__)
    if expected is not None and len(ledgers) != expected:
        raise InputError(field, f"{expected} values, one per attribute in policy order", len(ledgers))
    for index, value in enumerate(ledgers):
        if isinstance(value, bool) or not isinstance(value, Fraction | int):
            raise InputError(f"{field}[{index}]", EXACT, type(value).__name__)
    return tuple(value if isinstance(value, Fraction) else Fraction(value) for value in ledgers)


class LedgerVector(NamedTuple):
    """The kernel's ONE ledger form inside the turn: exact integer counts over a common
    denominator, L_a = units[a] / scale. The planner, its cursors, its slot plans and every
    `InterfaceState` carry this, never a loose (units, scale) pair and never a second
    Fraction copy; the Fraction view (`Ledgers`) is made at the public boundary by `ledgers`.

    A value: two vectors are equal when they are the same ledgers, over whatever scale
    (units_a * scale' == units'_a * scale), and hash alike then."""

    units: Units
    scale: int

    @classmethod
    def of(cls, ledgers: Ledgers, base_scale: int) -> LedgerVector:
        """`ledgers` as counts over the lcm of `base_scale` and their denominators (exact)."""
        scale = common_scale(base_scale, ledgers)
        return cls(to_units(ledgers, scale), scale)

    def ledgers(self) -> Ledgers:
        """L_a = units_a / scale in policy order, exact Fractions: the one conversion out,
        for what users, turn records, controls and the ledger store read."""
        return _fractions(self.units, self.scale)

    def over(self, base_scale: int) -> LedgerVector:
        """The same ledgers over a multiple of `base_scale`: itself when its scale is one,
        else over the lcm of `base_scale` and the ledgers' own denominators (`of`)."""
        if self.scale % base_scale == 0:
            return self
        if not any(self.units):  # zero ledgers: zero counts over base_scale (= `of`'s answer)
            return LedgerVector(self.units, base_scale)
        return LedgerVector.of(self.ledgers(), base_scale)

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


@lru_cache(maxsize=65536)
def _fractions(units: Units, scale: int) -> Ledgers:
    """`LedgerVector.ledgers`, memoized: a pure function of the counts, and a ledger takes
    few distinct values in a run, so each Fraction view is built once."""
    return tuple([Fraction(count, scale) for count in units])
