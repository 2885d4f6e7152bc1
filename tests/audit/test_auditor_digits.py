"""The digits the audit prints (dpmem_ref.audit.digits): the decimal exponent by its definition,
the certain digits of an enclosure by their definition (both ends round alike, and at no finer
quantum), and the printed text as an exact decimal of k * 10^e in the documented layout."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.audit.digits import SCIENTIFIC_ABOVE, SCIENTIFIC_BELOW, Certain, certain, decimal_exponent, format_units

positive = st.fractions(min_value=Fraction(1, 10**40), max_value=Fraction(10**40)).filter(lambda f: f > 0)


@given(positive)
def test_decimal_exponent_is_floor_log10(value: Fraction) -> None:
    k = decimal_exponent(value)
    assert Fraction(10) ** k <= value < Fraction(10) ** (k + 1)
    assert decimal_exponent(-value) == k


@pytest.mark.parametrize("k", [-30, -7, -1, 0, 1, 2, 19, 45])
def test_decimal_exponent_at_and_beside_powers_of_ten(k: int) -> None:
    power = Fraction(10) ** k
    tiny = power / 10**60
    assert decimal_exponent(power) == k
    assert decimal_exponent(power - tiny) == k - 1
    assert decimal_exponent(power + tiny) == k
    assert decimal_exponent(Fraction(10) ** (k + 1) - tiny) == k


def _rounds(value: Fraction, exponent: int) -> int:
    return round(value / Fraction(10) ** exponent)


@given(positive, st.fractions(min_value=0, max_value=Fraction(1, 1000)), st.integers(1, 40), st.booleans())
def test_certain_digits_are_the_finest_both_ends_agree_on(lo: Fraction, width: Fraction, digits: int, negate: bool) -> None:
    hi = lo + width * lo
    if negate:
        lo, hi = -hi, -lo
    found = certain(lo, hi, digits)
    assert _rounds(lo, found.exponent) == _rounds(hi, found.exponent) == found.units
    assert found.digits <= digits
    first = decimal_exponent(max(abs(lo), abs(hi))) - digits + 1
    assert found.exponent >= first
    if found.exponent > first:  # a finer quantum would tell the ends apart
        assert _rounds(lo, found.exponent - 1) != _rounds(hi, found.exponent - 1)


def test_certain_of_an_exact_zero_and_a_bad_enclosure() -> None:
    assert certain(Fraction(0), Fraction(0), 10) == Certain(0, 0)
    assert certain(Fraction(0), Fraction(0), 10).text() == "0"
    assert certain(Fraction(0), Fraction(0), 10).digits == 0
    with pytest.raises(ValueError, match="an enclosure needs lo <= hi"):
        certain(Fraction(2), Fraction(1), 10)


def test_an_enclosure_around_zero_prints_its_quantum() -> None:
    found = certain(Fraction(-1, 10**5), Fraction(1, 10**5), 3)
    assert found.units == 0 and found.text() == f"0e{found.exponent}"
    assert Fraction(10) ** found.exponent / 2 > Fraction(1, 10**5)


@given(st.integers(-(10**30), 10**30), st.integers(-40, 40))
def test_text_is_exactly_k_times_ten_to_the_e(units: int, exponent: int) -> None:
    text = format_units(units, exponent)
    assert Fraction(Decimal(text)) == units * Fraction(10) ** exponent
    if units == 0:
        assert text == ("0" if exponent == 0 else f"0e{exponent}")
        return
    digits = str(abs(units))
    leading = exponent + len(digits) - 1
    fixed = exponent <= 0 and SCIENTIFIC_BELOW <= leading <= SCIENTIFIC_ABOVE
    assert ("e" in text) is not fixed
    assert text.startswith("-") is (units < 0)
    assert text.lstrip("-").replace(".", "").split("e")[0].lstrip("0") == digits  # exactly k's digits, nothing padded
    if not fixed:
        mantissa, shown = text.lstrip("-").split("e")
        assert int(shown) == leading and mantissa == digits[0] + ("." + digits[1:] if len(digits) > 1 else "")


@pytest.mark.parametrize(
    ("units", "exponent", "text"),
    [
        (0, 0, "0"), (0, -3, "0e-3"), (7, 0, "7"), (-5, 0, "-5"), (123, 0, "123"), (123, -1, "12.3"), (123, -3, "0.123"),
        (123, -5, "0.00123"), (-123, -5, "-0.00123"), (1, -6, "0.000001"), (1, -7, "1e-7"), (12, -8, "1.2e-7"),
        (123, 2, "1.23e4"), (5, 1, "5e1"), (10**20, 0, "100000000000000000000"), (10**21, 0, "1.000000000000000000000e21"),
    ],
)
def test_text_layout(units: int, exponent: int, text: str) -> None:
    assert format_units(units, exponent) == text


@given(st.integers(-320, 320), st.integers(1, 10**60), st.sampled_from([1, 3, 7]), st.booleans())
def test_interval_ends_round_outward_to_the_loss_digits(exponent: int, mantissa: int, divisor: int, up: bool) -> None:
    """An interval end printed for the audit: at most LOSS_DIGITS significant digits, rounded
    outward (down for the lower end, up for the upper), and within one unit of its last digit."""
    from dpmem_ref.audit.numbers import LOSS_DIGITS, end_text

    value = Fraction(mantissa, divisor) * Fraction(10) ** exponent  # 1/3, 1/7: endless decimals to round
    shown = Fraction(Decimal(end_text(value, up=up)))
    assert (shown >= value) if up else (shown <= value)
    unit = Fraction(10) ** (decimal_exponent(value) - LOSS_DIGITS + 1)
    assert abs(shown - value) < unit
    digits = end_text(value, up=up).lstrip("-").split("e")[0].replace(".", "").strip("0")
    assert len(digits) <= LOSS_DIGITS
