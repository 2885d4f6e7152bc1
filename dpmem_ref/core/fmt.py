"""The kernel's one formatter of exact rationals for humans and JSON.

`fraction_text` writes "2" or "4/3" (exact); `decimal_text` writes a decimal rounded to
the nearest, or directed up/down so that printed interval ends still enclose the value.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

Rounding = Literal["nearest", "up", "down"]


def fraction_text(value: Fraction | int) -> str:
    """Exact text: "p" for an integer, "p/q" otherwise."""
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def decimal_text(value: Fraction | int, digits: int = 6, rounding: Rounding = "nearest") -> str:
    """`value` with at most `digits` digits after the point, trailing zeros dropped.

    rounding="up"/"down" rounds toward +inf/-inf (for interval ends); "nearest" rounds
    half to even. Integers print without a point."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    scaled = value * 10**digits
    if rounding == "up":
        units = -((-scaled.numerator) // scaled.denominator)
    elif rounding == "down":
        units = scaled.numerator // scaled.denominator
    else:
        units = round(scaled)
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), 10**digits)
    text = f"{sign}{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".") if digits else f"{sign}{whole}"
    return "0" if text in ("-0", "") else text
