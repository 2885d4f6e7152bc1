"""Exact rationals (dpmem_ref.core.rational): parsing with `to_fraction`, the range checks
(positive, non-negative, unit interval) and `require_positive_rational`, each refusal named
whole (one line naming the field and what was wrong).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import InputError
from dpmem_ref.core.rational import (
    nonnegative_fraction,
    positive_fraction,
    require_positive_rational,
    to_fraction,
    unit_interval_fraction,
)

RATIONAL = 'an integer or an exact rational string like "2/3"'


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, f"expected {RATIONAL}, found True"),
        (float("nan"), f"expected {RATIONAL} (a finite number, not NaN or infinity), found nan"),
        (float("inf"), f"expected {RATIONAL} (a finite number, not NaN or infinity), found inf"),
        (float("-inf"), f"expected {RATIONAL} (a finite number, not NaN or infinity), found -inf"),
        (0.1, f"expected {RATIONAL} (floats are not exact), found 0.1"),
        ("1" * 201, "expected a rational of at most 200 characters, found '201 characters'"),
        ("1/0", "expected a non-zero denominator, found '1/0'"),
        ("abc", f"expected {RATIONAL}, found 'abc'"),
        (None, f"expected {RATIONAL}, found None"),
        (1j, f"expected {RATIONAL}, found 1j"),
    ],
)
def test_to_fraction_names_the_field_and_what_was_wrong(value, message):
    with pytest.raises(InputError) as error:
        to_fraction(value, "budget.eps")
    assert str(error.value) == f"budget.eps: {message}"


def test_to_fraction_parses_exact_text():
    assert [to_fraction(v, "f") for v in (" 1 / 3 ", "-0.25", "+7", ".5", 4, Fraction(2, 3))] == [
        Fraction(1, 3), Fraction(-1, 4), Fraction(7), Fraction(1, 2), Fraction(4), Fraction(2, 3)
    ]
    assert to_fraction("1" * 200, "f") == int("1" * 200)


def test_to_fraction_admits_ascii_digits_spaces_and_tabs_and_refuses_other_characters_in_one_line():
    """Every Unicode whitespace character and decimal digit, around and inside a rational or
    a decimal: spaces and tabs give the ASCII text's value; anything else (U+001C is
    whitespace to `re` but not to int(); other scripts' digits) is refused with InputError,
    never a bare ValueError."""
    import re

    whitespace = [c for c in map(chr, range(0x110000)) if re.match(r"\s", c)]
    digits = [c for c in map(chr, range(0x110000)) if re.match(r"\d", c) and c not in "0123456789"]
    assert "\x1c" in whitespace and len(digits) > 300
    shapes = ("{c}1/3", "1/3{c}", "1{c}/{c}3", "-2{c}", "{c}1.5", "1.5{c}")
    values = (Fraction(1, 3), Fraction(1, 3), Fraction(1, 3), Fraction(-2), Fraction(3, 2), Fraction(3, 2))
    for c in whitespace:
        for shape, value in zip(shapes, values, strict=True):
            text = shape.format(c=c)
            if c in " \t":
                assert to_fraction(text, "f") == value, repr(text)
            else:
                with pytest.raises(InputError):
                    to_fraction(text, "f")
    for c in digits:
        for text in (c, f"1/{c}", f"{c}.5", f"0.{c}"):
            with pytest.raises(InputError):
                to_fraction(text, "f")


def test_positive_fraction_names_the_field():
    assert positive_fraction("1/4", "budget.K") == Fraction(1, 4)
    for bad, found in (("0", "'0'"), (-1, "-1")):
        with pytest.raises(InputError) as error:
            positive_fraction(bad, "budget.K")
        assert str(error.value) == f"budget.K: expected a positive number, found {found}"
    with pytest.raises(InputError) as error:
        positive_fraction("x", "budget.K")
    assert str(error.value) == f"budget.K: expected {RATIONAL}, found 'x'"


def test_nonnegative_fraction_accepts_zero_and_names_the_field():
    assert nonnegative_fraction("0", "uncharged_epsilon") == 0
    with pytest.raises(InputError) as error:
        nonnegative_fraction("-1/2", "uncharged_epsilon")
    assert str(error.value) == "uncharged_epsilon: expected a non-negative number, found '-1/2'"
    with pytest.raises(InputError) as error:
        nonnegative_fraction("x", "uncharged_epsilon")
    assert str(error.value) == f"uncharged_epsilon: expected {RATIONAL}, found 'x'"


def test_unit_interval_fraction_accepts_both_ends_and_names_the_field():
    assert unit_interval_fraction("0", "relevance.v") == 0
    assert unit_interval_fraction(1, "relevance.v") == 1
    assert unit_interval_fraction("1/3", "relevance.v") == Fraction(1, 3)
    for bad in ("3/2", 2, "-1/5"):
        with pytest.raises(InputError) as error:
            unit_interval_fraction(bad, "relevance.v")
        assert str(error.value) == f"relevance.v: expected a number in [0, 1], found {bad!r}"
    with pytest.raises(InputError) as error:  # the parse error names the same field
        unit_interval_fraction("half", "relevance.v")
    assert str(error.value) == "relevance.v: expected an integer or an exact rational string like \"2/3\", found 'half'"


def test_require_positive_rational_names_the_type_or_the_value():
    assert require_positive_rational(Fraction(2, 3), "epsilon") == Fraction(2, 3)
    assert require_positive_rational(3, "epsilon") == 3
    for bad, found in ((0.5, "'float'"), (True, "'bool'"), ("1", "'str'")):
        with pytest.raises(InputError) as error:
            require_positive_rational(bad, "epsilon")
        assert str(error.value) == f"epsilon: expected a positive exact rational (Fraction or int), found {found}"
    for bad, found in ((0, "'0'"), (Fraction(-1, 3), "'-1/3'")):
        with pytest.raises(InputError) as error:
            require_positive_rational(bad, "caps.a")
        assert str(error.value) == f"caps.a: expected a positive exact rational, found {found}"
