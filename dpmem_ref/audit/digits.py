"""Printing an enclosed real with only the digits the enclosure proves.

The engine reports every finite loss as an interval [lo, hi] with exact rational ends
that encloses the exact value x. `certain_text` prints the integer k and quantum 10^e
such that lo and hi both round (to nearest, ties to even) to k * 10^e, with the finest
quantum at most `digits` significant digits allow. Rounding to nearest is monotone, so x,
lying between lo and hi, rounds to the same k * 10^e: every printed digit is the exact
value's correctly rounded digit, whatever the magnitude (a loss of 1e-300 prints as many
digits as the enclosure proves, never the noise of an absolute error). An enclosure
containing 0 and too wide to decide any digit prints "0e<e>" (|x| < 10^e / 2).

`quantum_text` prints another value (the witness replay) at the same quantum, so the two
texts can be compared digit for digit.
"""

from __future__ import annotations

from fractions import Fraction

import attrs

SCIENTIFIC_BELOW = -6  # decimal exponents below this (or above SCIENTIFIC_ABOVE) print as d.ddde<n>
SCIENTIFIC_ABOVE = 20


def decimal_exponent(value: Fraction) -> int:
    """floor(log10 |value|) exactly (value != 0)."""
    magnitude = abs(value)
    guess = len(str(magnitude.numerator)) - len(str(magnitude.denominator))
    while Fraction(10) ** guess > magnitude:
        guess -= 1
    while Fraction(10) ** (guess + 1) <= magnitude:
        guess += 1
    return guess


def _scaled_round(value: Fraction, exponent: int) -> int:
    """round(value / 10^exponent), ties to even (Python's round on a Fraction)."""
    return round(value / Fraction(10) ** exponent)


@attrs.frozen
class Certain:
    """k * 10^exponent, the value every point of the enclosure rounds to; `digits` is the
    number of significant digits of k (0 when k = 0)."""

    units: int
    exponent: int

    @property
    def digits(self) -> int:
        return 0 if self.units == 0 else len(str(abs(self.units)))

    def text(self) -> str:
        return format_units(self.units, self.exponent)


def certain(lo: Fraction, hi: Fraction, digits: int) -> Certain:
    """The finest quantum (at most `digits` significant digits) at which lo and hi round alike."""
    if lo > hi:
        raise ValueError("an enclosure needs lo <= hi")
    top = max(abs(lo), abs(hi))
    if top == 0:
        return Certain(0, 0)
    exponent = decimal_exponent(top) - digits + 1
    while True:
        low, high = _scaled_round(lo, exponent), _scaled_round(hi, exponent)
        if low == high:
            return Certain(low, exponent)
        exponent += 1


def quantum_text(value: Fraction, exponent: int) -> str:
    """`value` rounded to a multiple of 10^exponent, printed as `certain` prints."""
    return format_units(_scaled_round(value, exponent), exponent)


def format_units(units: int, exponent: int) -> str:
    """k * 10^e with exactly the digits of k: fixed point when readable, else d.ddde<n>."""
    if units == 0:
        return f"0e{exponent}" if exponent else "0"
    sign = "-" if units < 0 else ""
    text = str(abs(units))
    leading = exponent + len(text) - 1  # decimal exponent of the first digit
    if exponent <= 0 and SCIENTIFIC_BELOW <= leading <= SCIENTIFIC_ABOVE:
        point = len(text) + exponent
        if point <= 0:
            return f"{sign}0.{'0' * -point}{text}"
        return f"{sign}{text[:point]}.{text[point:]}" if point < len(text) else f"{sign}{text}"
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{sign}{mantissa}e{leading}"
