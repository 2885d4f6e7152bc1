"""The ledger-store contract: the store protocols, C5 at commit, and the store's errors (the
facts it keeps are `facts`, their text encodings `codecs`).

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

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Protocol

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.facts import ReleaseOutcome, ReleaseRequest, SessionKey, SessionSnapshot

SCHEMA_VERSION = "2"
LEGACY_SCHEMA_VERSION = "1"  # written before the chain (and maybe before the fingerprint)

FaultHook = Callable[[str], None]


class LedgerStoreError(RuntimeError):
    """The persisted ledger state is unreadable, inconsistent or unreachable (one line that
    names the database and the check; never a driver traceback)."""


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


