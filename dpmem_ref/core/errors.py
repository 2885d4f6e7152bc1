"""Errors of the kernel: contract breaches (C1-C6) and bad input.

A breach of Definition 1 is one concept with one code table (VIOLATION_CODES): the static
check reports it as a `Violation` record (dpmem_ref.contract), the strict kernel raises it as
a `ContractViolation`; both carry the same `code`, `condition` and `kind`.

Both carry one-line messages that name *where* (slot, attribute, field) and *what*,
and never contain raw memory or internal scores.
"""

from __future__ import annotations

import attrs

CONDITIONS = ("C1", "C2", "C3", "C4", "C5", "C6")

VIOLATION_CODES: dict[str, str] = {
    "C1.generic_not_in_vocabulary": "a slot's generic view is not in its vocabulary",
    "C1.no_vocabulary": "a slot is read without a fixed public vocabulary",
    "C1.vocabulary_without_slot": "a vocabulary names a slot with no positions",
    "C1.unknown_relevance_view": "a read's public relevance names views outside the vocabulary",
    "C1.store_dependent_vocabulary": "the view vocabulary depends on the store (private hook)",
    "C2.unknown_charge_attribute": "a declared charge set names unknown attributes",
    "C2.charge_omits_attribute": "a declared charge set omits an attribute of Gamma*(R) (Eq. 4)",
    "C2.uncharged_read": "a planned read touches I_a but is not charged to a (Eq. 4)",
    "C3.selector_not_em": "the selector is not the exponential mechanism (Eq. 7)",
    "C3.nonpositive_sensitivity": "a charged read's declared sensitivity bound is not positive",
    "C3.sensitivity_below_bound": "a declared sensitivity bound is below the scorer's exact bound (Eq. 6)",
    "C3.score_count": "the scorer returned a score vector of the wrong length",
    "C3.invalid_epsilon": "the budget rule's eps for a charged selection is not a positive exact rational",
    "C4.memory_routing": "slot activation reads raw memory (private hook)",
    "C4.score_fallback": "the fallback decision reads internal scores (private hook)",
    "C4.read_outside_slot": "a read set includes positions of other slots",
    "C4.reuse_reads_memory": "a reuse rule's refresh reads a memory change not declared public",
    "C5.cap_rule": "the cap rule does not keep L_a <= B_a on every path",
    "C5.ledger_over_cap": "a ledger exceeds its cap after an update",
    "C5.store_refusal_admitted": "the cap rule admits what the committed ledger store refused",
    "C6.control_reads_private": "the observable control reads raw memory or internal scores",
}
"""Every stable violation code `Cn.kind` the kernel raises or reports, with its meaning.
Callers branch on `code` (or `condition`), never on message prose."""

PART_LEVEL_CODES = frozenset({"C3.selector_not_em", "C5.cap_rule", "C6.control_reads_private"})
"""Codes that concern a whole part (selector, cap rule, control), not one query's read."""


def split_code(code: str) -> tuple[str, str]:
    """("C2", "uncharged_read") from "C2.uncharged_read"; ("C2", "") from "C2"."""
    condition, _, kind = code.partition(".")
    if condition not in CONDITIONS:
        raise ValueError(f"unknown contract condition {condition!r}")
    if kind and code not in VIOLATION_CODES:
        raise ValueError(f"unknown violation code {code!r}")
    return condition, kind


class ContractViolation(Exception):
    """A DP-MemView interface-contract condition (Definition 1, C1-C6) is broken.

    `code` is a stable machine-readable code from VIOLATION_CODES ("C2.uncharged_read"),
    or the bare condition for callers that give none; `condition` is its C1..C6 part. The
    message names the offending slot, attribute or value (public names only) and is for
    humans: callers branch on `code`.
    """

    def __init__(self, code: str, message: str) -> None:
        condition, kind = split_code(code)
        self.code = code
        self.condition = condition
        self.kind = kind
        self.message = one_line(message)
        super().__init__(f"{condition}: {self.message}")


@attrs.frozen
class Violation:
    """One breach of Definition 1: its condition, a human message, and the code's kind."""

    condition: str
    message: str
    kind: str = ""
    # Where it was found, when it concerns one read (structured, so no caller parses the message).
    query: str | None = None
    slot: str | None = None
    attribute: str | None = None
    positions: tuple[int, ...] = ()

    @classmethod
    def of(
        cls,
        code: str,
        message: str,
        query: str | None = None,
        slot: str | None = None,
        attribute: str | None = None,
        positions: tuple[int, ...] = (),
    ) -> Violation:
        condition, kind = split_code(code)
        return cls(condition, message, kind, query, slot, attribute, positions)

    @property
    def code(self) -> str:
        """"C2.charge_omits_attribute", or the bare condition when no kind was given."""
        return f"{self.condition}.{self.kind}" if self.kind else self.condition

    @property
    def part_level(self) -> bool:
        """True when the finding concerns a whole part (selector, cap rule, control), so it
        applies to every charged selection rather than one query's read."""
        return self.code in PART_LEVEL_CODES


class InputError(ValueError):
    """Malformed input: names the field, what was expected and what was found."""

    def __init__(self, field: str, expected: str, found: object) -> None:
        self.field = one_line(field)
        self.expected = one_line(expected)
        self.found = found
        super().__init__(f"{self.field}: expected {self.expected}, found {_short(found)}")


def _short(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 200:  # repr() refuses past 4300 digits
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except Exception:  # a caller's object whose repr fails: name its type only
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def error_origin(error: BaseException) -> str:
    """file:line (function) where an exception was raised: no message, no values (a message
    may quote an input or a secret). The last-resort report of `dpmem` and `dpmem serve`."""
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None:
        return "unknown"
    code = frame.tb_frame.f_code
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{frame.tb_lineno} ({code.co_name})"


def one_line(text: str) -> str:
    """Escape line breaks and other non-printable characters (names come from input files)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
