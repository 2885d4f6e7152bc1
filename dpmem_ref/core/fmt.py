"""The kernel's one formatter of exact rationals for humans and JSON.

`fraction_text` writes "2" or "4/3" (exact); `decimal_text` writes a decimal rounded to
the nearest, or directed up/down so that printed interval ends still enclose the value;
`significant_text` writes a given number of significant digits, rounded toward +inf or -inf.
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


def significant_text(value: Fraction, digits: int, up: bool) -> str:
    """`value` to `digits` significant digits, rounded toward +inf (up) or -inf, with its sign."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    exponent = len(str(magnitude.numerator // magnitude.denominator)) - 1 if magnitude >= 1 else 0
    if magnitude < 1:
        exponent = -1
        while magnitude * Fraction(10) ** (-exponent) < 1:
            exponent -= 1
    scale = Fraction(10) ** (digits - 1 - exponent)
    scaled = value * scale
    integer = -((-scaled.numerator) // scaled.denominator) if up else scaled.numerator // scaled.denominator
    sign = "-" if integer < 0 else ""
    text = str(abs(integer))
    point = len(text) - (digits - 1 - exponent)
    if point <= 0:
        text = "0." + "0" * (-point) + text
    elif point < len(text):
        text = text[:point] + "." + text[point:]
    else:
        text = text + "0" * (point - len(text))
    return sign + text
