"""Budget scopes: ledgers keyed by (subject, application), each with its own precommitted caps.

The paper's adversary is the application over everything it observes (Theorem 1), across
every conversation it opens. So a scope's ledgers are keyed by the subject (the user whose
memory items are read; every item has exactly one owner, `memory`) and the application,
and its lifetime caps are shared by every interaction of that application; the
interaction id only labels a stretch of history and never selects a ledger.

The caps of a scope are a public, precommitted allocation: the interface's caps B_a, or,
with a per-user cap U_a (`[scopes] user_caps`), the application's declared share
B^app_a <= B_a with sum over applications <= U_a (`settings.check_shares`). An
application's admissions and its `remaining` therefore read its OWN scope only: what it
observes is a function of its own released history (C6), so Theorem 1 holds per
application with B^app_a, and sequential composition over applications gives U_a per
subject (docs/agent.md, "Budget scopes"). A per-user ledger shared dynamically by all
applications would leak one application's spending into another's admissions.

In the ledger store a scope is one session: (subject, "e<epoch>:app:<app>"), where the
epoch counts the recorded budget epochs of the database (`binding`); when the interface
declares a budget period, (subject, "e<epoch>:p<k>:app:<app>"), one scope per public
period k (`periods`: k is a function of the injected clock only). Scope ids are
restricted to [A-Za-z0-9._-] so these names never collide. (Databases written before
shares may also hold per-user sessions "e<epoch>:user"; they are listed, never read.)

`ScopedLedgers` is a `LedgerSession` over one scope whose stored caps are its share S_a,
so the kernel's `DurableSession.run_turn` (Algorithm 1 against a durable ledger) serves
it unchanged: `load` gives the planner the effective ledgers L'_a = B_a - (S_a - L_a), so
the cap rule (line 9, L'_a + eps <= B_a) admits exactly when L_a + eps <= S_a, which the
store re-checks on the committed ledger in the charge's transaction (C5).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.contract import (
    LedgerSession,
    LedgerStore,
    ReleaseOutcome,
    ReleaseRequest,
    SessionKey,
    SessionSnapshot,
)
from dpmem_ref.runtime.turns import RecordedTurn
from dpmem_ref.schemas import json_value


def check_scope_id(value: object, field: str) -> str:
    """A user, application or interaction id: the one id rule (dpmem_ref.core.validate.ID)."""
    from dpmem_ref.core.validate import check_id

    return check_id(value, field)


def app_scope(epoch: int, app: str, period: int | None = None) -> str:
    """The ledger-store interaction id of the (user, application) scope: "e<epoch>:app:<app>",
    or "e<epoch>:p<period>:app:<app>" when the interface declares a budget period (one
    fresh scope per public period, `runtime.periods`)."""
    name = check_scope_id(app, "app")
    return f"e{epoch}:app:{name}" if period is None else f"e{epoch}:p{period}:app:{name}"


def user_scope(epoch: int) -> str:
    """The ledger-store interaction id of the per-user scope across applications."""
    return f"e{epoch}:user"


@attrs.frozen
class ScopeName:
    """A parsed runtime scope name: its epoch, its period (None: no period) and its
    application (None: a per-user scope of a database written before shares)."""

    epoch: int
    period: int | None
    app: str | None


_SCOPE_NAME = re.compile(r"e(0|[1-9][0-9]*):(?:(?:p(0|[1-9][0-9]*):)?app:([A-Za-z0-9][A-Za-z0-9._-]*)|user)")


def parse_scope_name(interaction: str) -> ScopeName | None:
    """The one parser of the names `app_scope` and `user_scope` build; None for a
    non-runtime session (a `dpmem run` session of the same database)."""
    match = _SCOPE_NAME.fullmatch(interaction)
    if match is None:
        return None
    period = match.group(2)
    return ScopeName(int(match.group(1)), None if period is None else int(period), match.group(3))


def parse_scope(interaction: str) -> tuple[int, str | None] | None:
    """(epoch, app or None for the per-user scope), or None for a non-runtime session."""
    name = parse_scope_name(interaction)
    return None if name is None else (name.epoch, name.app)


def durable_turn_id(user: str, interaction: str, turn_id: str) -> str:
    """The ledger-store turn id of a client's turn id in one scope (64 hex digits): a retry
    finds the turn's committed rows after a restart, or on another replica."""
    import hashlib

    return hashlib.sha256(f"{user}\0{interaction}\0{turn_id}".encode()).hexdigest()


def effective_ledgers(spent: Mapping[str, Fraction], caps: Mapping[str, Fraction], share: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """L'_a = B_a - (S_a - L_a): the scope's room under its share S_a <= B_a, as a ledger over B_a."""
    return {a: caps[a] - (share[a] - spent[a]) for a in spent}


def remaining(ledgers: Mapping[str, Fraction], caps: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {a: caps[a] - ledgers[a] for a in sorted(caps)}


@attrs.frozen
class ScopedLedgers:
    """A `LedgerSession` over one (subject, application) scope with caps `share` <= `caps`."""

    app: LedgerSession
    caps: Mapping[str, Fraction]
    share: Mapping[str, Fraction]
    # The durable turn id of the turn in progress (`durable_turn_id`), or empty: the kernel's own.
    _turn: list[str] = attrs.field(factory=list, eq=False, repr=False)

    @contextmanager
    def turn_id(self, turn_id: str | None) -> Iterator[None]:
        """Store the turn's releases and record under `turn_id` (None: the kernel's random
        id). Turns of one scope are serialised by the caller (dpmem serve's scope lock)."""
        self._turn[:] = [] if turn_id is None else [turn_id]
        try:
            yield
        finally:
            self._turn.clear()

    def _id(self, kernel_id: str) -> str:
        return self._turn[0] if self._turn else kernel_id

    @property
    def key(self) -> SessionKey:
        return self.app.key

    def _effective(self, spent: Mapping[str, Fraction]) -> dict[str, Fraction]:
        return effective_ledgers(spent, self.caps, self.share)

    def load(self) -> SessionSnapshot:
        snapshot = self.app.load()
        ledgers = self._effective(snapshot.ledger_map())
        return attrs.evolve(snapshot, ledgers=tuple(sorted(ledgers.items())))

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        if also:
            raise InputError("also", "no extra scopes (a scope's admissions read its own ledger only)", len(also))
        outcome = self.app.charge_and_record(attrs.evolve(request, turn_id=self._id(request.turn_id)))
        ledgers = self._effective(dict(outcome.ledgers))
        return attrs.evolve(outcome, ledgers=tuple(sorted(ledgers.items())))

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        self.app.record_turn(self._id(turn_id), record)

    def recorded_turn(self, turn_id: str, text: str) -> RecordedTurn | None:
        """The committed record of the turn stored under `turn_id`, or None. Every kernel turn
        writes one release row per active slot, then its record, in that order; so the
        record is the k-th of the history, k = the turns whose rows precede its rows."""
        snapshot = self.app.load()
        order: list[str] = []
        for release in snapshot.releases:
            if release.turn_id not in order:
                order.append(release.turn_id)
        if turn_id not in order or order.index(turn_id) >= len(snapshot.history):
            return None
        record = snapshot.history[order.index(turn_id)]
        rows = tuple((r.slot, r.view) for r in snapshot.releases if r.turn_id == turn_id)
        if tuple(record.views) != rows:
            return None
        return RecordedTurn(query=text, route=record.query, released=rows, control=json_value(record.control))

    def spent(self) -> dict[str, Fraction]:
        """The committed ledgers of the scope."""
        return self.app.load().ledger_map()


@attrs.frozen
class ScopedLedgerStore:
    """The ledger store as `DurableSession.open` sees it: opening the scope's session returns
    the `ScopedLedgers` over its scopes (the fingerprint binding is the ledger store's own)."""

    ledger_store: LedgerStore
    scoped: ScopedLedgers

    @property
    def fingerprint(self) -> str | None:
        return self.ledger_store.fingerprint

    def open_session(
        self, user: str, interaction: str, caps: Mapping[str, Fraction], fingerprint: str | None = None
    ) -> ScopedLedgers:
        # The scope's own caps (its share); `caps` are the interface's, which the planner keeps.
        self.ledger_store.open_session(user, interaction, self.scoped.share, fingerprint=fingerprint)  # the binding
        return self.scoped

    def read_meta(self, key: str) -> str | None:
        return self.ledger_store.read_meta(key)

    def rebind(self, *args: Any, **kwargs: Any) -> None:
        raise InputError("rebind", "the runtime's own binding (runtime.binding.bind)", "a scope's session")

    def user_ledgers(self, user: str) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
        return self.ledger_store.user_ledgers(user)

    def close(self) -> None:
        pass  # the runtime closes the ledger store
