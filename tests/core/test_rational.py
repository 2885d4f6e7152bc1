"""Exact rationals (dpmem_ref.core.rational): parsing with `to_fraction`, the range checks
(positive, non-negative, unit interval) and `require_positive_rational`, each refusal named
whole (one line naming the field and what was wrong); and printing them, `fraction_text`,
`decimal_text` and `significant_text`, against an independent oracle: the standard library's
`decimal`, whose division is correctly rounded in any context (General Decimal Arithmetic).
The kernel prints budgets, ledgers and loss bounds with these; an interval end printed one
unit on the wrong side would make an audit's enclosure claim more than it proved, so the
rounding direction is pinned exactly.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref import InputError
from dpmem_ref.core.rational import (
    decimal_text,
    fraction_text,
    nonnegative_fraction,
    positive_fraction,
    require_positive_rational,
    significant_text,
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


# ---------------------------------------------------------------------------------------
# printing: fraction_text, decimal_text, significant_text


def test_one_fraction_formatter() -> None:
    assert fraction_text(Fraction(4, 2)) == "2" and fraction_text(Fraction(4, 3)) == "4/3"
    assert decimal_text(Fraction(4, 3)) == "1.333333"
    assert decimal_text(Fraction(4, 3), 2, "up") == "1.34" and decimal_text(Fraction(-4, 3), 2, "up") == "-1.33"
    assert decimal_text(Fraction(1, 3), 3, "down") == "0.333" and decimal_text(Fraction(-1, 10**9), 3) == "0"


ROUNDINGS = {"nearest": ROUND_HALF_EVEN, "up": ROUND_CEILING, "down": ROUND_FLOOR}
fractions = st.fractions(max_denominator=10**6).filter(lambda value: abs(value) < 10**12)
# Values next to a decimal grid point (k / 10**d +- a tiny step) and exact halves, where a
# rounding slip shows.
near_grid = st.builds(
    lambda k, d, step, sign: Fraction(k, 10**d) + sign * Fraction(1, step),
    st.integers(-(10**7), 10**7),
    st.integers(0, 8),
    st.sampled_from([2 * 10**9, 10**12, 3 * 10**15]),
    st.sampled_from([-1, 0, 1]),
)


def _decimal(value: Fraction, context: Context) -> Decimal:
    """value, correctly rounded in `context` (Decimal division is correctly rounded)."""
    return context.divide(Decimal(value.numerator), Decimal(value.denominator))


def _oracle_decimal_text(value: Fraction, digits: int, rounding: str) -> Decimal:
    # Exact enough: 80 significant digits with ROUND_05UP keep a later rounding to
    # `digits` places correct (the quotient's last digit records inexactness).
    wide = _decimal(value, Context(prec=80, rounding="ROUND_05UP"))
    return wide.quantize(Decimal(1).scaleb(-digits), rounding=ROUNDINGS[rounding], context=Context(prec=200))


def _significant_digits(text: str) -> str:
    return text.lstrip("-").replace(".", "").lstrip("0")


@given(st.one_of(fractions, near_grid), st.integers(0, 9), st.sampled_from(sorted(ROUNDINGS)))
def test_decimal_text_rounds_like_the_decimal_oracle(value: Fraction, digits: int, rounding: str) -> None:
    text = decimal_text(value, digits, rounding)  # type: ignore[arg-type]
    expected = str(value.numerator) if value.denominator == 1 else _oracle_decimal_text(value, digits, rounding)
    assert Decimal(text) == Decimal(expected)
    # The printed form: no exponent, no trailing zero after the point, no "-0", no bare point.
    assert "e" not in text.lower() and text not in ("-0", "") and not text.endswith(".")
    assert "." not in text or (not text.endswith("0") and len(text.split(".")[1]) <= digits)
    assert text.startswith("-") == (Decimal(text) < 0)


@pytest.mark.parametrize(
    ("value", "digits", "rounding", "text"),
    [
        (Fraction(7), 6, "nearest", "7"),  # an integer prints without a point, whatever the rounding
        (Fraction(-7), 0, "up", "-7"),
        (Fraction(3, 2), 0, "nearest", "2"),  # half to even
        (Fraction(5, 2), 0, "nearest", "2"),
        (Fraction(5, 2), 0, "up", "3"),
        (Fraction(5, 2), 0, "down", "2"),
        (Fraction(-5, 2), 0, "down", "-3"),
        (Fraction(-5, 2), 0, "up", "-2"),
        (Fraction(1, 2), 6, "nearest", "0.5"),  # trailing zeros dropped
        (Fraction(-1, 2), 6, "nearest", "-0.5"),
        (Fraction(1, 8), 2, "nearest", "0.12"),  # 0.125: half to even
        (Fraction(3, 8), 2, "nearest", "0.38"),
        (Fraction(1, 3), 3, "up", "0.334"),
        (Fraction(1, 3), 3, "down", "0.333"),
        (Fraction(-1, 3), 3, "down", "-0.334"),
        (Fraction(-1, 3), 3, "up", "-0.333"),
        (Fraction(-1, 10**9), 3, "nearest", "0"),  # never "-0"
        (Fraction(-1, 10**9), 3, "up", "0"),
        (Fraction(-1, 10**9), 3, "down", "-0.001"),
        (Fraction(1, 10**9), 3, "up", "0.001"),
        (Fraction(1, 10**9), 3, "down", "0"),
        (Fraction(2, 10**7), 6, "nearest", "0"),
        (Fraction(21, 20), 1, "nearest", "1"),  # 1.05 -> 1.0 -> "1" (trailing ".0" dropped)
        (Fraction(199, 100), 1, "up", "2"),
        (Fraction(-199, 100), 1, "down", "-2"),
        (Fraction(4, 3), 6, "nearest", "1.333333"),
    ],
)
def test_decimal_text_examples(value: Fraction, digits: int, rounding: str, text: str) -> None:
    assert decimal_text(value, digits, rounding) == text  # type: ignore[arg-type]


def test_decimal_text_defaults_to_six_digits_rounded_half_to_even() -> None:
    assert decimal_text(Fraction(1, 3)) == "0.333333"
    assert decimal_text(Fraction(2, 3)) == "0.666667"
    assert decimal_text(Fraction(5, 2 * 10**6)) == "0.000002"  # 2.5e-6: half to even
    assert decimal_text(Fraction(7, 2 * 10**6)) == "0.000004"
    assert decimal_text(3) == "3" and decimal_text(Fraction(6, 3)) == "2"


@given(
    st.one_of(fractions, near_grid).filter(lambda value: value != 0),
    st.integers(1, 20),
    st.booleans(),
)
def test_significant_text_rounds_like_the_decimal_oracle(value: Fraction, digits: int, up: bool) -> None:
    text = significant_text(value, digits, up)
    expected = _decimal(value, Context(prec=digits, rounding=ROUND_CEILING if up else ROUND_FLOOR))
    assert Decimal(text) == expected
    assert "e" not in text.lower() and not text.endswith(".")
    assert text.startswith("-") == (value < 0)
    # Exactly `digits` significant digits are printed (zeros kept), one more when rounding
    # carried into the next power of ten; a whole number with more digits than that is
    # printed in full, with zeros past them.
    significant = _significant_digits(text)
    if "." in text:
        carried = significant.rstrip("0") == "1"  # a power of ten
        assert len(significant) == digits or (carried and len(significant) == digits + 1)
    else:
        assert len(significant.rstrip("0")) <= digits <= len(text.lstrip("-"))


@pytest.mark.parametrize(
    ("value", "digits", "up", "text"),
    [
        (Fraction(0), 3, True, "0"),
        (Fraction(1), 3, True, "1.00"),
        (Fraction(1), 1, False, "1"),
        (Fraction(9, 10), 3, True, "0.900"),
        (Fraction(1, 2), 3, False, "0.500"),
        (Fraction(123, 100000), 2, False, "0.0012"),
        (Fraction(123, 100000), 2, True, "0.0013"),
        (Fraction(-123, 100000), 2, True, "-0.0012"),
        (Fraction(-123, 100000), 2, False, "-0.0013"),
        (Fraction(1, 10), 2, True, "0.10"),
        (Fraction(1, 100), 1, False, "0.01"),
        # Rounding that carries into the next power of ten keeps the point where it was:
        # one more digit shows ("1.0" for 1 digit), the value exact (today's printed form).
        (Fraction(99, 100), 1, True, "1.0"),
        (Fraction(999, 100), 2, True, "10.0"),
        (Fraction(-999, 100), 2, False, "-10.0"),
        (Fraction(9999), 2, True, "10000"),
        (Fraction(2469, 2), 3, True, "1240"),  # 1234.5: zeros past the significant digits
        (Fraction(2469, 2), 3, False, "1230"),
        (Fraction(-2469, 2), 3, False, "-1240"),
        (Fraction(2469, 2), 5, True, "1234.5"),
        (Fraction(2469, 2), 6, False, "1234.50"),
        (Fraction(10), 2, True, "10"),
        (Fraction(19, 10), 1, True, "2"),
        (Fraction(19, 10), 1, False, "1"),
        (Fraction(15, 10), 2, False, "1.5"),
        (Fraction(11, 10), 2, True, "1.1"),
        (Fraction(2, 3), 12, True, "0.666666666667"),
        (Fraction(2, 3), 12, False, "0.666666666666"),
        (Fraction(1, 7 * 10**5), 3, False, "0.00000142"),
    ],
)
def test_significant_text_examples(value: Fraction, digits: int, up: bool, text: str) -> None:
    assert significant_text(value, digits, up) == text


def test_decimal_text_refuses_an_unknown_rounding() -> None:
    with pytest.raises(ValueError, match="rounding must be 'nearest', 'up' or 'down', not 'NEAREST'"):
        decimal_text(Fraction(1, 3), 2, "NEAREST")  # type: ignore[arg-type]


@given(st.integers(1, 10**30), st.integers(1, 10**30))
def test_significant_text_finds_the_decimal_exponent_exactly(p: int, q: int) -> None:
    """One significant digit rounded down is the leading digit at 10**floor(log10(p/q)):
    checked against the integer definition 10**e <= p/q < 10**(e + 1)."""
    value = Fraction(p, q)
    text = significant_text(value, 1, up=False)
    leading = Decimal(text)
    exponent = leading.adjusted()
    assert 1 <= int(leading.scaleb(-exponent)) <= 9
    assert Fraction(10) ** exponent <= value < Fraction(10) ** (exponent + 1)


# ---------------------------------------------------------------------------------------
# the public exponential mechanism's arguments (require_em_arguments): one line naming the
# argument and what was wrong; the value is shown only when it is an exact rational


class _FractionSubclass(Fraction):
    """A Fraction of another type: takes the general checks, not the plain-Fraction fast path."""


EM_SCORES = (Fraction(0), Fraction(1))


class _ViewName(str):
    """A view name of a str subclass: a name all the same."""


@pytest.mark.parametrize(
    ("views", "scores", "epsilon", "sensitivity", "message"),
    [
        (("a", "b"), EM_SCORES, Fraction(0), Fraction(1), "epsilon: expected a positive exact rational (Fraction), found '0'"),
        (("a", "b"), EM_SCORES, 0.5, Fraction(1), "epsilon: expected a positive exact rational (Fraction), found 'float'"),
        (("a", "b"), EM_SCORES, _FractionSubclass(-1, 2), Fraction(1), "epsilon: expected a positive exact rational (Fraction), found '-1/2'"),
        (("a", "b"), EM_SCORES, Fraction(1), Fraction(-1, 2), "sensitivity: expected a positive exact rational (Fraction), found '-1/2'"),
        (("a", "b"), EM_SCORES, Fraction(1), 1, "sensitivity: expected a positive exact rational (Fraction), found 'int'"),
        ("ab", EM_SCORES, Fraction(1), Fraction(1), "views: expected a sequence of view names and one score per view, found 'str'"),
        (5, EM_SCORES, Fraction(1), Fraction(1), "views: expected a sequence of view names and one score per view, found 'int'"),
        ({"a", "b"}, EM_SCORES, Fraction(1), Fraction(1), "views: expected a sequence of view names and one score per view, found 'set'"),
        (("a", "b"), "ab", Fraction(1), Fraction(1), "scores: expected one exact score per view, found 'str'"),
        (("a", "b"), 5, Fraction(1), Fraction(1), "scores: expected one exact score per view, found 'int'"),
        (("a", "b"), (Fraction(0), 0.5), Fraction(1), Fraction(1), "scores[1]: expected an exact rational (Fraction) in [0, 1], found 'float'"),
        (("a", "b"), (Fraction(0), Fraction(3, 2)), Fraction(1), Fraction(1), "scores[1]: expected an exact rational (Fraction) in [0, 1], found 'Fraction'"),
        (("a", "b"), (Fraction(-1, 2), Fraction(0)), Fraction(1), Fraction(1), "scores[0]: expected an exact rational (Fraction) in [0, 1], found 'Fraction'"),
        (("a", "b"), (Fraction(0), _FractionSubclass(3, 2)), Fraction(1), Fraction(1), "scores[1]: expected an exact rational (Fraction) in [0, 1], found '_FractionSubclass'"),
        (("a", 2), EM_SCORES, Fraction(1), Fraction(1), "views: expected view names (str), found 'int'"),
    ],
)
def test_the_exponential_mechanism_names_a_bad_argument_in_one_line(views, scores, epsilon, sensitivity, message) -> None:
    from dpmem_ref import exponential_mechanism

    with pytest.raises(InputError) as error:
        exponential_mechanism(views, scores, epsilon, sensitivity)
    assert str(error.value) == message


def test_the_exponential_mechanism_takes_any_sequence_and_fraction_subclasses_at_both_ends() -> None:
    """Lists, other Sequences and Fraction subclasses are exact too: eps = 1/2 and Delta = 1/3
    (numerators 1, values below 1) and scores at 0 and 1 exactly are accepted, the same law."""
    from collections import UserList

    from dpmem_ref import exponential_mechanism

    plain = exponential_mechanism(("a", "b"), (Fraction(0), Fraction(1)), Fraction(1, 2), Fraction(1, 3))
    for views, scores, epsilon, sensitivity in [
        (["a", "b"], [Fraction(0), Fraction(1)], Fraction(1, 2), Fraction(1, 3)),
        (UserList(["a", "b"]), UserList([Fraction(0), Fraction(1)]), Fraction(1, 2), Fraction(1, 3)),
        (("a", "b"), (_FractionSubclass(0), _FractionSubclass(1)), _FractionSubclass(1, 2), _FractionSubclass(1, 3)),
        ((_ViewName("a"), _ViewName("b")), (Fraction(0), Fraction(1)), Fraction(1, 2), Fraction(1, 3)),
    ]:
        weights = exponential_mechanism(views, scores, epsilon, sensitivity)
        assert weights.views == ("a", "b") and weights.exponents == plain.exponents == (Fraction(0), Fraction(3, 4))
