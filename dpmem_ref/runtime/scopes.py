"""Budget scopes: ledgers keyed by (user, application), plus an optional per-user scope.

The paper's adversary is the application over everything it observes (Theorem 1), across
every conversation it opens. So a scope's ledgers are keyed by the user and the
application, and its lifetime caps B_a are shared by every interaction of that
application; the interaction id only labels a stretch of history and never selects a
ledger. An optional per-user scope, with caps U_a, bounds applications that collude.

In the ledger store a scope is one session: (user, "e<epoch>:app:<app>") for the
(user, application) scope and (user, "e<epoch>:user") for the per-user one, where the
epoch counts the recorded budget epochs of the database (`evolution`). Scope ids are
restricted to [A-Za-z0-9._-] so these names never collide.

`ScopedLedgers` is a `LedgerSession` over both scopes, so the kernel's
`DurableSession.run_turn` (Algorithm 1 against a durable ledger) serves a scope unchanged:

- `load` gives the planner the *effective* ledgers L'_a = B_a - min(B_a - L_a, U_a - L^u_a):
  the cap rule (line 9, L'_a + eps <= B_a) then admits exactly when there is room in every
  scope, and L_a <= L'_a <= B_a;
- `charge_and_record` debits both scopes in ONE store transaction (`also=`), re-checking
  L_a + eps <= B_a and L^u_a + eps <= U_a on the committed ledgers (C5 per scope); if either
  refuses, neither is charged and the generic view is recorded, which the effective
  ledgers it returns also refuse (so the kernel's re-plan agrees).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.contract import LedgerSession, ReleaseOutcome, ReleaseRequest, SessionKey, SessionSnapshot

_SCOPE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_scope_id(value: object, field: str) -> str:
    """A user, application or interaction id: 1..128 of [A-Za-z0-9._-], starting alphanumeric."""
    if not isinstance(value, str) or not _SCOPE_ID.fullmatch(value):
        shown = f"{len(value)} characters" if isinstance(value, str) else type(value).__name__
        raise InputError(field, "1..128 characters of [A-Za-z0-9._-], starting with a letter or digit", shown)
    return value


def app_scope(epoch: int, app: str) -> str:
    """The ledger-store interaction id of the (user, application) scope."""
    return f"e{epoch}:app:{check_scope_id(app, 'app')}"


def user_scope(epoch: int) -> str:
    """The ledger-store interaction id of the per-user scope across applications."""
    return f"e{epoch}:user"


def parse_scope(interaction: str) -> tuple[int, str | None] | None:
    """(epoch, app or None for the per-user scope), or None for a non-runtime session."""
    match = re.fullmatch(r"e(0|[1-9][0-9]*):(?:app:([A-Za-z0-9][A-Za-z0-9._-]*)|user)", interaction)
    if match is None:
        return None
    return int(match.group(1)), match.group(2)


def effective_ledgers(
    app: Mapping[str, Fraction],
    caps: Mapping[str, Fraction],
    user: Mapping[str, Fraction] | None,
    user_caps: Mapping[str, Fraction] | None,
) -> dict[str, Fraction]:
    """L'_a = B_a - min(B_a - L_a, U_a - L^u_a): room left in every scope, as a ledger over B_a."""
    if user is None or user_caps is None:
        return dict(app)
    return {a: caps[a] - min(caps[a] - app[a], user_caps[a] - user[a]) for a in app}


def remaining(ledgers: Mapping[str, Fraction], caps: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {a: caps[a] - ledgers[a] for a in sorted(caps)}


@attrs.frozen
class ScopedLedgers:
    """A `LedgerSession` over a (user, application) scope and the optional per-user scope."""

    app: LedgerSession
    caps: Mapping[str, Fraction]
    user: LedgerSession | None = None
    user_caps: Mapping[str, Fraction] | None = None

    @property
    def key(self) -> SessionKey:
        return self.app.key

    def _effective(self, app: Mapping[str, Fraction], user: Mapping[str, Fraction] | None) -> dict[str, Fraction]:
        return effective_ledgers(app, self.caps, user, self.user_caps)

    def load(self) -> SessionSnapshot:
        snapshot = self.app.load()
        if self.user is None:
            return snapshot
        user = self.user.load().ledger_map()
        ledgers = self._effective(snapshot.ledger_map(), user)
        return attrs.evolve(snapshot, ledgers=tuple(sorted(ledgers.items())))

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        if also:
            raise InputError("also", "no extra scopes (ScopedLedgers adds its own)", len(also))
        if self.user is None:
            return self.app.charge_and_record(request)
        outcome = self.app.charge_and_record(request, also=(self.user.key,))
        ledgers = self._effective(dict(outcome.ledgers), dict(outcome.scopes[0]))
        return attrs.evolve(outcome, ledgers=tuple(sorted(ledgers.items())))

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        self.app.record_turn(turn_id, record)

    def spent(self) -> tuple[dict[str, Fraction], dict[str, Fraction] | None]:
        """The committed ledgers of the (user, application) scope and of the per-user scope."""
        app = self.app.load().ledger_map()
        return app, None if self.user is None else self.user.load().ledger_map()
