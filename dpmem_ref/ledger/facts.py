"""The public facts a ledger store keeps, and their checks: whose ledger (`SessionKey`), what
is asked (`ReleaseRequest`), what was committed (`SlotRelease`, `ReleaseOutcome`) and what a
load returns (`SessionSnapshot`); the id rules of their fields. No memory content is ever a
fact: slot and view names, charge sets, eps, admission, public turn records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.rational import require_positive_rational
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.core.validate import LOWER_HEX, PRINTABLE_ASCII, IdRule, check_int

MAX_KEY_LENGTH = 256
MAX_NAME_LENGTH = 256

KEY_PART = IdRule(
    f"a printable ASCII id of 1..{MAX_KEY_LENGTH} characters",
    rf"^[\x20-\x7e]{{1,{MAX_KEY_LENGTH}}}$",
    allowed=PRINTABLE_ASCII,
    max_chars=MAX_KEY_LENGTH,
)
"""The user and interaction of a ledger session. Wider than the runtime's id rule
(dpmem_ref.core.validate.ID) on purpose: the store also keys the runtime's composed scope
names ("e0:app:calendar") and `dpmem run` sessions, and must read every database written
under this rule. Printable ASCII, because ids end up in logs and file names."""
NAME = IdRule(
    f"a name of 1..{MAX_NAME_LENGTH} characters",
    rf"^[\s\S]{{1,{MAX_NAME_LENGTH}}}$",
    allowed=None,
    max_chars=MAX_NAME_LENGTH,
)
"""Slot, view and attribute names in ledger rows: any text, bounded (the interface checks them)."""
RELEASE_ID = IdRule("1..64 lowercase hex digits", r"^[0-9a-f]{1,64}$", allowed=LOWER_HEX, max_chars=64)
"""Release and turn ids of the ledger: hex the kernel draws or derives (a client's turn id is
hashed into one, `runtime.scopes.durable_turn_id`), never a caller's label as given."""
FINGERPRINT = IdRule(
    "64 lowercase hex digits (sha256 of the interface)",
    r"^[0-9a-f]{64}$",
    allowed=LOWER_HEX,
    min_chars=64,
    max_chars=64,
)


def check_key_part(value: object, field: str) -> str:
    return KEY_PART.check(value, field)


def check_name(value: object, field: str) -> str:
    return NAME.check(value, field)


def check_turn_id(turn_id: object) -> str:
    return RELEASE_ID.check(turn_id, "turn_id")


def check_fingerprint(fingerprint: object) -> str:
    return FINGERPRINT.check(fingerprint, "fingerprint")


def check_caps(caps: Mapping[str, Fraction]) -> dict[str, Fraction]:
    if not isinstance(caps, Mapping) or not caps:
        raise InputError("caps", "a non-empty mapping attribute -> cap", type(caps).__name__)
    return {check_name(a, "caps"): require_positive_rational(c, f"caps.{a}") for a, c in caps.items()}


def check_same_caps(stored: Mapping[str, Fraction], given: Mapping[str, Fraction]) -> None:
    """Caps are precommitted per interaction: reopening it with other caps is refused."""
    if stored != given:
        raise InputError("caps", "the caps this interaction was opened with (precommitted)", "different caps")



@attrs.frozen
class SessionKey:
    """(user, interaction): one ledger vector and one released history."""

    user: str = attrs.field(validator=lambda _, __, v: check_key_part(v, "user"))
    interaction: str = attrs.field(validator=lambda _, __, v: check_key_part(v, "interaction"))


@attrs.frozen
class ReleaseRequest:
    """One slot-level release, prepared before the charge transaction.

    `view` is the candidate drawn privately from the plan's distribution (not yet
    observable); `fallback_view` is the slot's generic view, recorded instead when the plan
    did not admit the selection (`requested` is False: the kernel's cap rule said no) or
    when committing its charge would break L_a <= B_a on the committed ledgers (C5).
    """

    release_id: str
    turn_id: str
    index: int
    slot: str
    view: str
    fallback_view: str
    charge_set: frozenset[str]
    epsilon: Fraction
    requested: bool = True

    def __attrs_post_init__(self) -> None:
        RELEASE_ID.check(self.release_id, "release_id")
        RELEASE_ID.check(self.turn_id, "turn_id")
        check_int(self.index, "index", low=0)
        check_name(self.slot, "slot")
        check_name(self.view, "view")
        check_name(self.fallback_view, "fallback_view")
        if not isinstance(self.charge_set, frozenset) or not all(isinstance(a, str) for a in self.charge_set):
            raise InputError("charge_set", "a frozenset of attribute names", type(self.charge_set).__name__)
        require_positive_rational(self.epsilon, "epsilon")
        if not isinstance(self.requested, bool):
            raise InputError("requested", "true or false", self.requested)


@attrs.frozen
class SlotRelease:
    """A committed release row: what was (or may now be) released, and what it cost."""

    seq: int
    release_id: str
    turn_id: str
    index: int
    slot: str
    view: str
    admitted: bool
    charge_set: frozenset[str]
    epsilon: Fraction  # the amount charged to each attribute of charge_set (0 if not admitted)


@attrs.frozen
class ReleaseOutcome:
    """The committed result of `charge_and_record`: release `view` now, not before."""

    release: SlotRelease
    ledgers: tuple[tuple[str, Fraction], ...]
    # The other scopes debited in the same transaction (`charge_and_record(..., also=)`),
    # their ledgers as committed, in `also` order (empty for a single-scope charge).
    scopes: tuple[tuple[tuple[str, Fraction], ...], ...] = ()

    @property
    def view(self) -> str:
        return self.release.view

    @property
    def admitted(self) -> bool:
        return self.release.admitted

    def ledger_map(self) -> dict[str, Fraction]:
        return dict(self.ledgers)

    @classmethod
    def of(
        cls, release: SlotRelease, ledgers: Mapping[str, Fraction], scopes: Sequence[Mapping[str, Fraction]] = ()
    ) -> ReleaseOutcome:
        """The outcome with the ledgers as committed (sorted by attribute)."""
        return cls(
            release=release,
            ledgers=tuple(sorted(ledgers.items())),
            scopes=tuple(tuple(sorted(scope.items())) for scope in scopes),
        )


@attrs.frozen
class SessionSnapshot:
    """Ledgers, caps, committed releases and the completed-turn history of one session."""

    ledgers: tuple[tuple[str, Fraction], ...]
    caps: tuple[tuple[str, Fraction], ...]
    history: tuple[TurnRecord, ...]
    releases: tuple[SlotRelease, ...]

    def ledger_map(self) -> dict[str, Fraction]:
        return dict(self.ledgers)


def release_row(seq: int, request: ReleaseRequest, admitted: bool) -> SlotRelease:
    return SlotRelease(
        seq=seq,
        release_id=request.release_id,
        turn_id=request.turn_id,
        index=request.index,
        slot=request.slot,
        view=request.view if admitted else request.fallback_view,
        admitted=admitted,
        charge_set=request.charge_set if admitted else frozenset(),
        epsilon=request.epsilon if admitted and request.charge_set else Fraction(0),
    )
