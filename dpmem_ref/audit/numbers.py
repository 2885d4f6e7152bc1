"""How every auditor output prints numbers (text and JSON alike).

Exact fractions where the value is rational (bounds, ledgers, eps). A loss is printed from
its enclosure with only the digits the enclosure proves (`digits.certain`), at most
LOSS_DIGITS significant digits: every printed digit is the exact loss's correctly rounded
digit, for any magnitude. Interval ends are rounded outward to LOSS_DIGITS significant
digits (the lower end toward -inf, the upper toward +inf, signs kept), so the printed
interval still encloses the loss; an exact zero prints as 0.
"""

from __future__ import annotations

from fractions import Fraction

from dpmem_ref.analysis.loss import Loss
from dpmem_ref.audit.digits import Certain, certain, decimal_exponent, format_units, quantum_text
from dpmem_ref.core.rational import fraction_text, significant_text
from dpmem_ref.schemas import json_value as json_value  # one converter for every JSON output

LOSS_DIGITS = 50  # significant digits of reported losses (the engine works at IV_DPS = 70 or more)


def bound_text(bound: Fraction | None) -> str:
    """The bound exactly: an integer or a fraction ("4/3"), or "inf"."""
    return "inf" if bound is None else fraction_text(bound)


def bound_decimal(bound: Fraction | None) -> str:
    """The bound as a decimal (exact when it terminates, else LOSS_DIGITS digits rounded up)."""
    if bound is None:
        return "inf"
    text = significant_text(bound, LOSS_DIGITS, up=True)
    return text.rstrip("0").rstrip(".") if "." in text else text


def loss_certain(value: Loss, digits: int = LOSS_DIGITS) -> Certain | None:
    """The proved rounding of a finite, non-zero loss (None otherwise)."""
    if not value.is_finite or value.is_zero:
        return None
    lo, hi = value.ends()
    return certain(lo, hi, digits)


def loss_text(value: Loss, digits: int = LOSS_DIGITS) -> str:
    """The loss with only proved digits; "inf", "-inf" (impossible) or "0" (exact zero)."""
    if value.is_infinite:
        return "inf"
    if value.is_impossible:
        return "-inf"
    found = loss_certain(value, digits)
    return "0" if found is None else found.text()


def end_text(value: Fraction, up: bool) -> str:
    """One interval end, rounded outward to LOSS_DIGITS significant digits."""
    if value == 0:
        return "0"
    exponent = decimal_exponent(value)
    if -6 <= exponent <= 20:
        return significant_text(value, LOSS_DIGITS, up=up)
    scaled = value / Fraction(10) ** (exponent - LOSS_DIGITS + 1)
    units = -((-scaled.numerator) // scaled.denominator) if up else scaled.numerator // scaled.denominator
    return format_units(units, exponent - LOSS_DIGITS + 1)


def interval_text(value: Loss) -> list[str]:
    if value.is_infinite:
        return ["inf", "inf"]
    if value.is_impossible:
        return ["-inf", "-inf"]
    lo, hi = value.ends()
    return [end_text(lo, up=False), end_text(hi, up=True)]


def replayed_text(replayed: Fraction | None, loss: Loss) -> str:
    """The witness replay printed at the loss's own proved quantum (digit for digit)."""
    if replayed is None:
        return "inf"
    found = loss_certain(loss)
    if found is None:
        return "0" if replayed == 0 else certain(replayed, replayed, LOSS_DIGITS).text()
    return quantum_text(replayed, found.exponent)
