"""The validation vocabulary every boundary shares: integers, bounded reals (seconds), ids.

Each check returns the value it accepts and raises `InputError` naming the field, what was
expected and what was found. What was found is said concretely and safely:

- a number (int, float, Fraction, bool) or None is shown as it is: a number in a number
  field is a public parameter (a count, a position, a timeout), and InputError shortens an
  integer too long to print;
- an id that breaks its rule is shown with the reason ("'alice smith' (a space at
  character 6)"), clipped to a few dozen characters: ids are public labels (the ledger stores
  and lists them, the keys file holds them in clear), not secrets, and the value is what
  the caller sent in that very field. A string longer than the rule allows is NOT shown,
  only its length: text that long is likely something else pasted into the field (a memory
  item, a token);
- a number written as a string ('1', '2.5': at most NUMBER_TEXT_CHARS of digits, signs,
  '.', '_', 'e') is shown: the likely mistake, and no words, key or URL fits in it;
- any other value: its type name only ('str', 'list'): such a value may be anything a
  caller mixed up, a key, a URL with a password or memory text.

Secrets never reach these checks' messages by another route: a token (serve/keys.py) and
memory text (runtime/memory.py) have their own checks, which report a length or a type.
Over HTTP and MCP the server drops `found` altogether (dpmem_ref.serve.app).
"""

from __future__ import annotations

import math
import re
import string
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError

SHOWN_CHARS = 36
"""Longest repr of an offending id shown in a message (InputError cuts a found text at 60)."""
NUMBER_TEXT_CHARS = 24
"""Longest number-as-string shown as found in a number field."""
_NUMBER_TEXT = frozenset("0123456789+-._eE")


class Found(str):
    """A found text written for people ("an empty string", "'a b' (a space at character 2)"):
    InputError shows it as it is, where it quotes a plain string (repr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__str__(self)


def shown_type(value: object) -> object:
    """What a message reports for a value of the wrong type: a number or None as itself, a
    number written as a string as that string, anything else by its type name only (see the
    module's docstring)."""
    if value is None or isinstance(value, int | float | Fraction):
        return value
    if isinstance(value, str) and 0 < len(value) <= NUMBER_TEXT_CHARS and _NUMBER_TEXT.issuperset(value):
        return value
    return type(value).__name__


def missing(error: ImportError) -> Found:
    """What the import of an optional dependency found: the module it could not find
    ("no module 'langgraph'"), or that an installed one failed to import."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return Found(f"no module {error.name!r}")
    return Found(f"{type(error).__name__} while importing {error.name!r}" if error.name else type(error).__name__)


# ------------------------------------------------------------------------------ integers
def int_expected(low: int | None, high: int | None) -> str:
    """The expectation of a range: "an integer in 1..10", "a positive integer", ..."""
    if low is not None and high is not None:
        return f"an integer in {low}..{high}"
    if high is not None:
        return f"an integer of at most {high}"
    if low == 0:
        return "a non-negative integer"
    if low == 1:
        return "a positive integer"
    return "an integer" if low is None else f"an integer of at least {low}"


def check_int(
    value: object, field: str, low: int | None = None, high: int | None = None, expected: str | None = None
) -> int:
    """An int, not a bool, with low <= value <= high (either bound may be None: open)."""
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
        raise InputError(field, int_expected(low, high) if expected is None else expected, shown_type(value))
    if (low is not None and value < low) or (high is not None and value > high):
        raise InputError(field, int_expected(low, high) if expected is None else expected, value)
    return value


# --------------------------------------------------------------------- reals and seconds
def real_expected(low: float | None, high: float | None, above: bool) -> str:
    """The expectation of a range: "a number in (0, 3600]", "a finite number of at least 0", ..."""
    if low is not None and high is not None:
        return f"a number in {'(' if above else '['}{low}, {high}]"
    if low is not None:
        return f"a finite number {'above' if above else 'of at least'} {low}"
    return "a finite number" if high is None else f"a finite number of at most {high}"


def check_real(
    value: object,
    field: str,
    low: float | None = None,
    high: float | None = None,
    *,
    above: bool = False,
    expected: str | None = None,
) -> float:
    """A finite int or float, not a bool, with low <= value <= high (low < value when
    `above`); either bound may be None. Returned as given (an int stays exact)."""
    text = real_expected(low, high, above) if expected is None else expected
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(field, text, shown_type(value))
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(field, text, value)
    if low is not None and (value <= low if above else value < low):
        raise InputError(field, text, value)
    if high is not None and value > high:
        raise InputError(field, text, value)
    return value


def check_seconds(value: object, field: str, high: float) -> float:
    """A duration in seconds in (0, high]: a timeout, a deadline."""
    return check_real(value, field, 0, high, above=True, expected=f"a number of seconds in (0, {high}]")


# ------------------------------------------------------------------------------------ ids
ALNUM = frozenset(string.ascii_letters + string.digits)
LOWER_HEX = frozenset("0123456789abcdef")
PRINTABLE_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F))


@attrs.frozen
class IdRule:
    """One kind of id: the expectation errors state, the rule as an anchored regular
    expression (`pattern`: what accepts, and what a JSON Schema states), and the same rule
    as characters and lengths (`allowed`, None: any; `first`, None: as `allowed`), from
    which a refusal says what is wrong. tests/core/test_validate.py holds the two forms to
    the same strings."""

    expected: str
    pattern: str
    allowed: frozenset[str] | None
    first: frozenset[str] | None = None
    min_chars: int = 1
    max_chars: int = 128
    _regex: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile(self.pattern))

    def accepts(self, value: str) -> bool:
        return self._regex.fullmatch(value) is not None

    def problem(self, value: str) -> Found | None:
        """What is wrong with a string under this rule, said concretely; None: it is fine."""
        if not value:
            return Found("an empty string")
        if len(value) > self.max_chars:
            return Found(f"a string of {len(value)} characters")
        if len(value) < self.min_chars:
            return Found(f"{_clip(value)} ({len(value)} characters)")
        first = self.allowed if self.first is None else self.first
        if first is not None and value[0] not in first:
            return Found(f"{_clip(value)} (starts with {_char(value[0])})")
        if self.allowed is not None:
            for index, char in enumerate(value):
                if char not in self.allowed:
                    return Found(f"{_clip(value)} ({_char(char)} at character {index + 1})")
        return None

    def check(self, value: object, field: str) -> str:
        if not isinstance(value, str):
            raise InputError(field, self.expected, shown_type(value))
        if self._regex.fullmatch(value) is None:
            raise InputError(field, self.expected, self.problem(value) or Found("a string this rule refuses"))
        return value


def _clip(value: str) -> str:
    shown = repr(value)
    return shown if len(shown) <= SHOWN_CHARS else shown[: SHOWN_CHARS - 3] + "..."


def _char(char: str) -> str:
    return "a space" if char == " " else repr(char)


ID = IdRule(
    "1..128 characters of [A-Za-z0-9._-], starting with a letter or digit",
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$",
    allowed=ALNUM | frozenset("._-"),
    first=ALNUM,
    max_chars=128,
)
"""The one rule for user, application and interaction ids (and the runtime's idempotency
keys): they label budget scopes, whose ledger names ("e0:app:<app>") must never collide,
and appear in URLs, logs and the keys file."""


def check_id(value: object, field: str) -> str:
    """A user, application or interaction id (`ID`)."""
    return ID.check(value, field)
