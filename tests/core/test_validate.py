"""The validation vocabulary (dpmem_ref.core.validate): each check accepts exactly its range,
is tight at both ends, and says concretely and safely what it found."""

from __future__ import annotations

import importlib
import re
import string
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import (
    ID,
    NUMBER_TEXT_CHARS,
    Found,
    IdRule,
    check_id,
    check_int,
    check_real,
    check_seconds,
    int_expected,
    missing,
    shown_type,
)
from dpmem_ref.ledger.facts import FINGERPRINT, KEY_PART, NAME, RELEASE_ID
from dpmem_ref.runtime.memory import ITEM_ID
from dpmem_ref.serve.models import NAME_PATTERN

RULES = {
    "ID": ID,
    "ITEM_ID": ITEM_ID,
    "KEY_PART": KEY_PART,
    "NAME": NAME,
    "RELEASE_ID": RELEASE_ID,
    "FINGERPRINT": FINGERPRINT,
}
"""Every id rule of the kernel."""


def _message(check: object, *args: object, **keywords: object) -> str:
    assert callable(check)
    with pytest.raises(InputError) as error:
        check(*args, **keywords)
    return str(error.value)


# ------------------------------------------------------------------------------ integers
bounds = st.tuples(st.integers(-(10**6), 10**6), st.integers(0, 10**6)).map(lambda p: (p[0], p[0] + p[1]))


@given(st.integers(-(10**7), 10**7), bounds)
def test_check_int_accepts_exactly_the_inclusive_range(value: int, low_high: tuple[int, int]) -> None:
    low, high = low_high
    if low <= value <= high:
        assert check_int(value, "n", low, high) == value
    else:
        assert _message(check_int, value, "n", low, high) == f"n: expected an integer in {low}..{high}, found {value}"


@given(bounds)
def test_check_int_is_tight_at_both_ends(low_high: tuple[int, int]) -> None:
    low, high = low_high
    assert check_int(low, "n", low, high) == low and check_int(high, "n", low, high) == high
    for outside in (low - 1, high + 1):
        with pytest.raises(InputError):
            check_int(outside, "n", low, high)


@given(st.integers(), st.integers(), st.booleans())
def test_check_int_with_one_bound_is_open_on_the_other_side(value: int, bound: int, lower: bool) -> None:
    low, high = (bound, None) if lower else (None, bound)
    inside = value >= bound if lower else value <= bound
    if inside:
        assert check_int(value, "n", low, high) == value
    else:
        with pytest.raises(InputError):
            check_int(value, "n", low, high)


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (1, 10, "an integer in 1..10"),
        (0, None, "a non-negative integer"),
        (1, None, "a positive integer"),
        (5, None, "an integer of at least 5"),
        (None, 7, "an integer of at most 7"),
        (None, None, "an integer"),
    ],
)
def test_the_integer_expectations_read_as_their_range(low: int | None, high: int | None, expected: str) -> None:
    assert int_expected(low, high) == expected


@pytest.mark.parametrize(
    ("value", "found"),
    [
        (True, "True"),  # a bool is not an int here, and is shown as itself
        (False, "False"),
        (2.0, "2.0"),
        (Fraction(1, 2), "Fraction(1, 2)"),
        (None, "None"),
        ("3", "'3'"),  # a number written as a string: the likely mistake, shown
        ("-1.5e3", "'-1.5e3'"),
        ("three", "'str'"),  # words: the type only
        ("1" * (NUMBER_TEXT_CHARS + 1), "'str'"),
        ([3], "'list'"),
        ({"a": 1}, "'dict'"),
    ],
)
def test_check_int_refuses_other_types_and_says_what_it_found(value: object, found: str) -> None:
    assert _message(check_int, value, "budget.K", 1) == f"budget.K: expected a positive integer, found {found}"


def test_a_huge_integer_is_reported_by_its_size() -> None:
    assert (
        _message(check_int, 10**5000, "n", 0, 10)
        == "n: expected an integer in 0..10, found an integer of about 5001 digits"
    )


def test_an_expected_text_of_the_callers_replaces_the_range() -> None:
    message = _message(check_int, 0, "--port", 1, 9, "a position in 1..9")
    assert message == "--port: expected a position in 1..9, found 0"


@given(st.text(min_size=1).filter(lambda text: not set(text) <= set("0123456789+-._eE")))
def test_a_string_with_words_in_a_number_field_is_never_echoed(text: str) -> None:
    assert shown_type(text) == "str"
    message = _message(check_int, text, "n", 0)
    assert message == "n: expected a non-negative integer, found 'str'"


# --------------------------------------------------------------------- reals and seconds
@given(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**4), 10**4)),
    st.floats(-100, 100),
    st.floats(0, 100),
    st.booleans(),
)
def test_check_real_accepts_exactly_finite_numbers_in_range(
    value: float, low: float, width: float, above: bool
) -> None:
    high = low + width
    finite = not isinstance(value, float) or value == value and abs(value) != float("inf")
    inside = finite and (low < value if above else low <= value) and value <= high
    if inside:
        assert check_real(value, "x", low, high, above=above) == value
    else:
        with pytest.raises(InputError):
            check_real(value, "x", low, high, above=above)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_check_real_refuses_what_is_not_finite_even_without_bounds(value: float) -> None:
    assert _message(check_real, value, "clock") == f"clock: expected a finite number, found {value!r}"


def test_check_seconds_is_tight_at_both_ends() -> None:
    assert check_seconds(3600, "t", 3600) == 3600 and check_seconds(5e-324, "t", 3600) == 5e-324
    assert _message(check_seconds, 0, "t", 3600) == "t: expected a number of seconds in (0, 3600], found 0"
    assert _message(check_seconds, 3600.0000000000005, "t", 3600) == (
        "t: expected a number of seconds in (0, 3600], found 3600.0000000000005"
    )
    assert _message(check_seconds, True, "t", 3600) == "t: expected a number of seconds in (0, 3600], found True"
    assert _message(check_seconds, "60s", "t", 3600) == "t: expected a number of seconds in (0, 3600], found 'str'"


def test_an_exact_integer_stays_exact() -> None:
    big = 10**400  # past what a float holds: returned as given, never converted
    assert check_real(big, "clock", low=0) == big


def test_the_real_expectations_read_as_their_range() -> None:
    assert _message(check_real, 2, "q", 0.5, 1) == "q: expected a number in [0.5, 1], found 2"
    assert _message(check_real, 0, "q", 0, 1, above=True) == "q: expected a number in (0, 1], found 0"
    assert _message(check_real, -1, "q", 0) == "q: expected a finite number of at least 0, found -1"
    assert _message(check_real, 0, "q", 0, above=True) == "q: expected a finite number above 0, found 0"
    assert _message(check_real, 2, "q", None, 1) == "q: expected a finite number of at most 1, found 2"


# ------------------------------------------------------------------------------------ ids
ID_EXPECTED = "1..128 characters of [A-Za-z0-9._-], starting with a letter or digit"


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("alice smith", "'alice smith' (a space at character 6)"),
        ("-alice", "'-alice' (starts with '-')"),
        ("e0:app:cal", "'e0:app:cal' (':' at character 3)"),
        ("alice\n", r"'alice\n' ('\n' at character 6)"),
        ("bo\u00efte", "'bo\u00efte' ('\u00ef' at character 3)"),
        ("", "an empty string"),
        ("a" * 129, "a string of 129 characters"),  # too long to be an id: not echoed
        ("a" * 100 + "/", "'" + "a" * 32 + "... ('/' at character 101)"),  # clipped, the reason kept
        (3, "3"),
        (None, "None"),
        (["alice"], "'list'"),
    ],
)
def test_an_id_refusal_says_what_it_found(value: object, found: str) -> None:
    assert _message(check_id, value, "user") == f"user: expected {ID_EXPECTED}, found {found}"


def _rule_strings(rule: IdRule) -> st.SearchStrategy[str]:
    """Strings near a rule: its own characters, a few others, lengths around its bounds."""
    own = sorted(rule.allowed) if rule.allowed is not None else list(string.printable)
    others = [" ", ":", "/", ".", "_", "-", "A", "\n", "\x00", "\u00e9", "\U0001f600"]
    chars = st.sampled_from(own + others)
    short = st.text(chars, max_size=8)
    near_max = st.integers(max(0, rule.max_chars - 2), rule.max_chars + 2).flatmap(
        lambda n: st.lists(st.sampled_from(own), min_size=n, max_size=n).map("".join)
    )
    near_min = st.integers(max(0, rule.min_chars - 2), rule.min_chars + 1).flatmap(
        lambda n: st.lists(st.sampled_from(own), min_size=n, max_size=n).map("".join)
    )
    mixed = st.tuples(near_max, st.integers(0, rule.max_chars + 1), st.sampled_from(others)).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + 1 :]
    )
    return st.one_of(short, near_max, near_min, mixed)


@pytest.mark.parametrize("name", sorted(RULES))
@given(data=st.data())
def test_a_rules_pattern_and_its_characters_are_one_rule(name: str, data: st.DataObject) -> None:
    rule = RULES[name]
    value = data.draw(_rule_strings(rule))
    accepted = rule.accepts(value)
    assert accepted == (rule.problem(value) is None), (name, value)
    if accepted:
        assert rule.check(value, "f") == value
    else:
        message = _message(rule.check, value, "f")
        assert message.startswith(f"f: expected {rule.expected}, found ")
        assert "\n" not in message and len(message) <= len(f"f: expected {rule.expected}, found ") + 60


@given(st.text(max_size=140))
def test_every_runtime_id_follows_the_one_rule(value: str) -> None:
    accepted = ID.accepts(value)
    assert accepted == (re.fullmatch(NAME_PATTERN, value) is not None)  # the HTTP models' pattern
    if accepted:
        assert check_id(value, "user") == value
    else:
        with pytest.raises(InputError):
            check_id(value, "user")


@given(st.text(min_size=ID.max_chars + 1, max_size=ID.max_chars + 300))
def test_an_overlong_id_is_reported_by_its_length_only(value: str) -> None:
    message = _message(check_id, value, "user")
    assert message == f"user: expected {ID_EXPECTED}, found a string of {len(value)} characters"


def test_found_texts_are_shown_as_written() -> None:
    found = Found("an empty string")
    assert found == "an empty string" and repr(found) == "an empty string" and str(found) == "an empty string"
    assert str(InputError("f", "x", found)) == "f: expected x, found an empty string"
    assert str(InputError("f", "x", "an empty string")) == "f: expected x, found 'an empty string'"


def test_a_missing_dependency_is_named() -> None:
    with pytest.raises(ImportError) as error:
        importlib.import_module("dpmem_no_such_module")
    assert missing(error.value) == "no module 'dpmem_no_such_module'"
    assert (
        missing(ImportError("cannot import name 'x'", name="langgraph.graph"))
        == "ImportError while importing 'langgraph.graph'"
    )
