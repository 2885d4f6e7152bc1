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

A scope is a `ScopeKey` (`dpmem_ref.ledger.scopes`: subject, application, epoch, period),
stored as one session of the ledger store, (subject, "e<epoch>:app:<app>"), where the epoch
counts the recorded budget epochs of the database (`dpmem_ref.ledger.epochs`); when the interface declares
a budget period, (subject, "e<epoch>:p<k>:app:<app>"), one scope per public period k
(`dpmem_ref.ledger.periods`: k is a function of the injected clock only). `ScopeKey` is the one encoder and
parser of these names; scope ids are restricted to [A-Za-z0-9._-] so they never collide.
(Databases written before shares may also hold per-user sessions "e<epoch>:user"; they are
listed, never read.)

`ScopedLedgers` is a `LedgerSession` over one scope whose stored caps are its share S_a,
so the kernel's `DurableSession.run_turn` (Algorithm 1 against a durable ledger, opened
on it by `DurableSession.on_session`) serves it unchanged: `load` gives the planner the
effective ledgers L'_a = B_a - (S_a - L_a), so the cap rule (line 9, L'_a + eps <= B_a)
admits exactly when L_a + eps <= S_a, which the store re-checks on the committed ledger
in the charge's transaction (C5).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.contract import LedgerSession
from dpmem_ref.ledger.facts import ReleaseOutcome, ReleaseRequest, SessionKey, SessionSnapshot
from dpmem_ref.ledger.scopes import ScopeKey
from dpmem_ref.runtime.turns import RecordedTurn
from dpmem_ref.schemas import json_value


def durable_turn_id(scope: ScopeKey, turn_id: str) -> str:
    """The ledger-store turn id of a client's turn id in one scope (64 hex digits): a retry
    finds the turn's committed rows after a restart, or on another replica."""
    import hashlib

    return hashlib.sha256(f"{scope.user}\0{scope.interaction}\0{turn_id}".encode()).hexdigest()


def effective_ledgers(spent: Mapping[str, Fraction], caps: Mapping[str, Fraction], share: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """L'_a = B_a - (S_a - L_a): the scope's room under its share S_a <= B_a, as a ledger over B_a."""
    return {a: caps[a] - (share[a] - spent[a]) for a in spent}


def remaining(ledgers: Mapping[str, Fraction], caps: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {a: caps[a] - ledgers[a] for a in sorted(caps)}


def recorded_turn(snapshot: SessionSnapshot, turn_id: str, text: str) -> RecordedTurn | None:
    """The committed record of the turn stored under `turn_id` in a scope's `snapshot`, or
    None. Every kernel turn writes one release row per active slot, then its record, in that
    order; so the record is the k-th of the history, k = the turns whose rows precede its rows."""
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


@attrs.frozen
class ScopedLedgers:
    """A `LedgerSession` over one (subject, application) `scope`, whose stored session is
    `app`, with caps `share` <= `caps`."""

    scope: ScopeKey
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

    def __attrs_post_init__(self) -> None:
        if self.app.key != self.scope.session_key:
            raise InputError("app", f"the session of scope {self.scope.interaction}", self.app.key.interaction)

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

    def spent(self) -> dict[str, Fraction]:
        """The committed ledgers of the scope."""
        return self.app.load().ledger_map()
