"""Exact rationals for budgets, epsilons, scores and sensitivity bounds: parsing them
(`to_fraction` and friends) and printing them (the kernel's one formatter for humans and JSON).

Ledgers must add 2/3 + 2/3 + 2/3 to exactly 2 (C5), so nothing that feeds an
admission decision is ever a float.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from dpmem_ref.core.errors import InputError

# ASCII digits, and only the spaces and tabs that int() and Fraction() strip themselves:
# `\s` and `\d` would admit characters (U+001C, other scripts' digits) that they refuse.
_RATIONAL = re.compile(r"[ \t]*[+-]?[0-9]+(?:[ \t]*/[ \t]*[0-9]+)?[ \t]*")
_DECIMAL = re.compile(r"[ \t]*[+-]?[0-9]*\.[0-9]+[ \t]*")

Rational = int | Fraction | str
MAX_RATIONAL_TEXT = 200
_TOO_MANY_DIGITS = 10**MAX_RATIONAL_TEXT


def to_fraction(value: object, field: str) -> Fraction:
    """Parse an exact rational: an int, a Fraction, or a string like "2/3" or "0.25".

    Floats are refused (they are rarely the number the author meant: 0.1 is not 1/10),
    and so are booleans, NaN and infinities.
    """
    expected = 'an integer or an exact rational string like "2/3"'
    if isinstance(value, bool):
        raise InputError(field, expected, value)
    if isinstance(value, Fraction | int):
        # As for text: at most MAX_RATIONAL_TEXT digits in the numerator and the denominator
        # (a 5000-digit integer from TOML or code would outgrow every exact bound, and
        # cannot even be printed in an error message).
        number = Fraction(value)
        if abs(number.numerator) >= _TOO_MANY_DIGITS or number.denominator >= _TOO_MANY_DIGITS:
            raise InputError(field, f"a rational of at most {MAX_RATIONAL_TEXT} digits", "a longer one")
        return number
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InputError(field, expected + " (a finite number, not NaN or infinity)", value)
        raise InputError(field, expected + " (floats are not exact)", value)
    if isinstance(value, str):
        if len(value) > MAX_RATIONAL_TEXT:  # also keeps int() below its 4300-digit limit
            raise InputError(field, f"a rational of at most {MAX_RATIONAL_TEXT} characters", f"{len(value)} characters")
        if _RATIONAL.fullmatch(value):
            numerator, _, denominator = value.partition("/")  # int() strips the spaces and tabs
            if denominator and int(denominator) == 0:
                raise InputError(field, "a non-zero denominator", value)
            return Fraction(int(numerator), int(denominator or 1))
        if _DECIMAL.fullmatch(value):
            return Fraction(value)  # Fraction() strips the spaces and tabs itself
        raise InputError(field, expected, value)
    raise InputError(field, expected, value)


def positive_fraction(value: object, field: str) -> Fraction:
    number = to_fraction(value, field)
    if number <= 0:
        raise InputError(field, "a positive number", value)
    return number


def nonnegative_fraction(value: object, field: str) -> Fraction:
    number = to_fraction(value, field)
    if number < 0:
        raise InputError(field, "a non-negative number", value)
    return number


def unit_interval_fraction(value: object, field: str) -> Fraction:
    number = to_fraction(value, field)
    if not 0 <= number <= 1:
        raise InputError(field, "a number in [0, 1]", value)
    return number


def require_positive_rational(value: object, field: str) -> Fraction:
    """A positive Fraction or int passed by code (not parsed from text): floats (NaN, inf,
    0.1) and booleans never reach an admission decision."""
    if isinstance(value, bool) or not isinstance(value, Fraction | int):
        raise InputError(field, "a positive exact rational (Fraction or int)", type(value).__name__)
    number = Fraction(value)
    if number <= 0:
        raise InputError(field, "a positive exact rational", str(number))
    return number


def require_em_arguments(views: object, scores: object, epsilon: object, sensitivity: object) -> None:
    """The public exponential mechanism's arguments (Eq. 7): eps and Delta positive exact
    rationals, one exact score in [0, 1] per view name. O(views); the planner memoizes its
    selections, so this runs once per distinct selection."""
    for field, value in (("epsilon", epsilon), ("sensitivity", sensitivity)):
        if type(value) is Fraction and value.numerator > 0:  # a Fraction's denominator is positive
            continue
        if not isinstance(value, Fraction) or value <= 0:
            shown = str(value) if isinstance(value, Fraction) else type(value).__name__
            raise InputError(field, "a positive exact rational (Fraction)", shown)
    # A str is a Sequence (of characters), never one of view names or of scores.
    if isinstance(views, str) or (type(views) is not tuple and not isinstance(views, Sequence)):
        raise InputError("views", "a sequence of view names and one score per view", type(views).__name__)
    if isinstance(scores, str) or (type(scores) is not tuple and type(scores) is not list and not isinstance(scores, Sequence)):
        raise InputError("scores", "one exact score per view", type(scores).__name__)
    if not _plain_unit_scores(scores):  # else the first score at fault, named as before
        for index, score in enumerate(scores):
            if not isinstance(score, Fraction) or not 0 <= score <= 1:
                raise InputError(f"scores[{index}]", "an exact rational (Fraction) in [0, 1]", type(score).__name__)
    for view in views:
        if type(view) is not str and not isinstance(view, str):
            raise InputError("views", "view names (str)", type(view).__name__)


def _plain_unit_scores(scores: Sequence[object]) -> bool:
    """True when every score is a plain Fraction in [0, 1], tested on its integers (the
    denominator is positive, so 0 <= n / d <= 1 is 0 <= n <= d): the common case in one
    cheap pass. False sends the caller to the general test (subclasses, other types)."""
    for score in scores:
        if type(score) is not Fraction:
            return False
        numerator = score.numerator
        if numerator < 0 or numerator > score.denominator:
            return False
    return True
# ------------------------------------------------------------ printing
# The kernel's one formatter of exact rationals for humans and JSON.
#
# `fraction_text` writes "2" or "4/3" (exact); `decimal_text` writes a decimal rounded to
# the nearest, or directed up/down so that printed interval ends still enclose the value;
# `significant_text` writes a given number of significant digits, rounded toward +inf or -inf.

Rounding = Literal["nearest", "up", "down"]


def fraction_text(value: Fraction | int) -> str:
    """Exact text: "p" for an integer, "p/q" otherwise."""
    value = Fraction(value)
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def decimal_text(value: Fraction | int, digits: int = 6, rounding: Rounding = "nearest") -> str:
    """`value` with at most `digits` digits after the point, trailing zeros dropped.

    rounding="up"/"down" rounds toward +inf/-inf (for interval ends); "nearest" rounds
    half to even. Integers print without a point. A value that rounds to zero prints "0"
    (never "-0": the sign is printed only for a nonzero count of 10**-digits units)."""
    value = Fraction(value)
    if value.denominator == 1:
        return str(value.numerator)
    scaled = value * 10**digits
    if rounding == "up":
        units = -((-scaled.numerator) // scaled.denominator)
    elif rounding == "down":
        units = scaled.numerator // scaled.denominator
    elif rounding == "nearest":
        units = round(scaled)
    else:
        raise ValueError(f"decimal_text: rounding must be 'nearest', 'up' or 'down', not {rounding!r}")
    sign = "-" if units < 0 else ""
    whole, frac = divmod(abs(units), 10**digits)
    # With digits = 0, frac is 0 and prints as one "0" that the strips remove again.
    return f"{sign}{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".")


def significant_text(value: Fraction, digits: int, up: bool) -> str:
    """`value` to `digits` significant digits, rounded toward +inf (up) or -inf, with its sign.

    The decimal exponent e = floor(log10 |value|), exactly, for |value| = p/q in lowest
    terms: when p >= q, e = len(str(p // q)) - 1 (the integer part has e + 1 digits);
    when p < q, e = -k for the least k >= 1 with p * 10**k >= q, and for integers
    p * 10**k >= q <=> 10**k > (q - 1) / p <=> 10**k > (q - 1) // p, whose least k is
    len(str((q - 1) // p)) ((q - 1) // p >= 1 as q > p). A rounding that carries into the
    next power of ten prints one more digit (0.99 up to 1 digit is "1.0"), the value exact."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    p, q = magnitude.numerator, magnitude.denominator
    exponent = len(str(p // q)) - 1 if p >= q else -len(str((q - 1) // p))
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
