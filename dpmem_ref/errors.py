"""Errors of the kernel: contract breaches (C1-C6) and bad input.

Both carry one-line messages that name *where* (slot, attribute, field) and *what*,
and never contain raw memory or internal scores.
"""

from __future__ import annotations

CONDITIONS = ("C1", "C2", "C3", "C4", "C5", "C6")


class ContractViolation(Exception):
    """A DP-MemView interface-contract condition (Definition 1, C1-C6) is broken.

    `condition` is one of C1..C6; the message names the offending slot, attribute or
    value (public names only).
    """

    def __init__(self, condition: str, message: str) -> None:
        if condition not in CONDITIONS:
            raise ValueError(f"unknown contract condition {condition!r}")
        self.condition = condition
        self.message = one_line(message)
        super().__init__(f"{condition}: {self.message}")


class InputError(ValueError):
    """Malformed input: names the field, what was expected and what was found."""

    def __init__(self, field: str, expected: str, found: object) -> None:
        self.field = one_line(field)
        self.expected = one_line(expected)
        self.found = found
        super().__init__(f"{self.field}: expected {self.expected}, found {_short(found)}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def one_line(text: str) -> str:
    """Escape line breaks and other non-printable characters (names come from input files)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
