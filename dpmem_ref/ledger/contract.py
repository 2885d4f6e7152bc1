"""The ledger-store contract: public release facts, the store protocols, and C5 at commit.

Theorem 1 assumes that the ledger L_a is exact and never forgets. A deployment that serves
one user from several processes (or hosts), or restarts, keeps that promise only if the
charge is one atomic step against shared state, and if the view is released only after
that step has committed (charge-before-release: a crash can over-charge, never
under-charge).

Admission is the kernel's decision, not the store's: `plan_slot` applies the interface's
own cap rule (Algorithm 1, line 9) to the ledgers the caller read, and the request carries
its verdict (`requested`) and its charge (charge set, eps). The store only commits that
charge atomically, re-checking the invariant L_a <= B_a (C5) against the *committed*
ledgers under its lock or transaction: another process may have spent the budget since
the caller read it, and then the commit is refused and the slot's generic view recorded.

Nothing here ever sees memory contents or scores: the store receives public facts only
(slot and view names, charge sets, eps, admission, public turn records).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Protocol

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.rational import require_positive_rational
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.core.validate import LOWER_HEX, PRINTABLE_ASCII, IdRule, check_int

MAX_KEY_LENGTH = 256
MAX_NAME_LENGTH = 256
SCHEMA_VERSION = "2"
LEGACY_SCHEMA_VERSION = "1"  # written before the chain (and maybe before the fingerprint)
MAX_FRACTION_TEXT = 401  # "p/q" of at most 200 digits each: bounded work on a corrupted row
_FRACTION_TEXT = re.compile(r"^(0|[1-9][0-9]*)/([1-9][0-9]*)$")

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

FaultHook = Callable[[str], None]


class LedgerStoreError(RuntimeError):
    """The persisted ledger state is unreadable, inconsistent or unreachable (one line that
    names the database and the check; never a driver traceback)."""


def fraction_to_text(value: Fraction) -> str:
    """Exact ledger text "p/q" (denominator always written)."""
    return f"{value.numerator}/{value.denominator}"


def fraction_from_text(text: object, where: str) -> Fraction:
    if not isinstance(text, str):
        raise LedgerStoreError(f"{where}: expected exact 'p/q' text, found {type(text).__name__}")
    if len(text) > MAX_FRACTION_TEXT:
        raise LedgerStoreError(f"{where}: a 'p/q' value of more than {MAX_FRACTION_TEXT} characters")
    match = _FRACTION_TEXT.fullmatch(text)
    if match is None:
        raise LedgerStoreError(f"{where}: expected exact non-negative 'p/q' text")
    return Fraction(int(match.group(1)), int(match.group(2)))


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


def id_used_before(field: str, value: str) -> InputError:
    """A release or turn id is unique per store: a second use is refused, nothing written."""
    return InputError(field, "an id not used before", value)


def interface_mismatch(database: str, stored: str, given: str) -> InputError:
    """The one line that refuses a second interface on a bound ledger database."""
    return InputError(
        f"ledger database {database}",
        f"the interface it was created with (fingerprint {stored[:12]})",
        f"a different interface (fingerprint {given[:12]})",
    )


def needs_migration(database: str, why: str) -> LedgerStoreError:
    """The one line that refuses a ledger written before the chain or the fingerprint:
    the operator binds it once, naming the interface it was written by."""
    return LedgerStoreError(
        f"ledger database {database}: {why}; bind it once to the interface that wrote it: "
        f"dpmem ledger migrate {database} --interface FILE"
    )


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


class LedgerSession(Protocol):
    """The persisted state of one (user, interaction)."""

    @property
    def key(self) -> SessionKey: ...

    def load(self) -> SessionSnapshot:
        """The committed ledgers, releases and completed turns."""

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        """ONE transaction: commit the plan's charge to every attribute of the charge set
        (all or none, C5 re-checked on the committed ledgers), plus the release row.
        Release the outcome's view only after this returns.

        `also` (budget scopes, docs/agent.md): other opened sessions of the same store
        whose ledgers the same charge debits in the same transaction; the charge commits
        only if it fits every scope (C5 per scope), else none is charged and the
        fallback is recorded. The release row belongs to this session only."""

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        """Append a completed turn to the released history (what routing reads, C4)."""


class LedgerStore(Protocol):
    @property
    def fingerprint(self) -> str | None:
        """The interface fingerprint the database is bound to (None until the first bind)."""

    def open_session(
        self, user: str, interaction: str, caps: Mapping[str, Fraction], fingerprint: str | None = None
    ) -> LedgerSession:
        """Open (creating at zero ledgers) the session; caps must match any stored ones.

        `fingerprint` (see `dpmem_ref.ledger.fingerprint`) binds the whole database to one
        interface on first use; a different one is refused with `interface_mismatch`."""

    def read_meta(self, key: str) -> str | None:
        """An extra meta row (keys start with META_PREFIX), None if absent."""

    def rebind(
        self,
        expected: str | None,
        fingerprint: str,
        meta: Mapping[str, str],
        caps_for: Callable[[SessionKey], Mapping[str, Fraction] | None] | None = None,
    ) -> None:
        """ONE transaction: bind the database to `fingerprint` if it is bound to
        `expected` (else `interface_mismatch`), write the `meta` rows, and, with
        `caps_for`, give every session for which it returns caps those caps (ledgers
        carried over by `rebound_caps`: new attributes at 0, C5 re-checked)."""

    def user_ledgers(self, user: str) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
        """Every session of `user`: (interaction, spent, caps), by interaction id."""

    def close(self) -> None: ...


def committed_charge(
    spent: Mapping[str, Fraction], caps: Mapping[str, Fraction], request: ReleaseRequest
) -> dict[str, Fraction] | None:
    """The ledgers after committing the plan's charge, or None when it must not commit.

    The admission decision is the plan's (`request.requested`, from the interface's cap
    rule). Here only the invariant is re-checked on the committed ledgers, under the
    store's lock: L_a <= B_a after the charge for every a (C5). A False means another
    process spent the budget since the plan read the ledgers; the fallback is recorded.
    """
    unknown = sorted(request.charge_set - set(caps))
    if unknown:
        raise InputError("charge_set", f"attributes among {sorted(caps)}", unknown)
    if not request.requested:
        return None
    after = {a: (v + request.epsilon if a in request.charge_set else v) for a, v in spent.items()}
    if any(after[a] > caps[a] for a in request.charge_set):
        return None
    return after


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
