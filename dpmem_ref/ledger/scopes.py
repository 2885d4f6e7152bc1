"""Budget scopes in the ledger stores (docs/agent.md): the typed key of a runtime scope and
its one stored name, one charge debiting several sessions in one transaction, caps carried
over an interface change, extra meta rows.

Kept apart from `contract` so the single-scope contract reads as before; every backend
calls these helpers under its own lock or transaction.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import PRINTABLE_ASCII
from dpmem_ref.ledger.contract import committed_charge
from dpmem_ref.ledger.facts import ReleaseRequest, SessionKey, check_caps, check_fingerprint, check_key_part

_APP = "[A-Za-z0-9][A-Za-z0-9._-]*"  # no ':', so no two scopes share a name
_NUMBER = "0|[1-9][0-9]*"
_SCOPE_NAME = re.compile(rf"e({_NUMBER}):(?:(?:p({_NUMBER}):)?app:({_APP})|user)")


def _check_count(value: object, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(field, "a non-negative integer", value)


def _check_app(value: object) -> None:
    if value is not None and not (isinstance(value, str) and re.fullmatch(_APP, value)):
        raise InputError("app", "None or an id of [A-Za-z0-9._-] starting with a letter or digit", value)


@attrs.frozen
class ScopeKey:
    """One budget scope of the runtime (docs/agent.md, "Budget scopes"): the subject `user`'s
    ledgers for application `app` in budget epoch `epoch` and, when the interface declares a
    budget period, public period `period` (None: no period). `app` None is the per-user scope
    of a database written before shares (listed, never read).

    In the ledger store a scope is one session, `session_key`: (user, "e<epoch>:app:<app>"),
    (user, "e<epoch>:p<period>:app:<app>") or (user, "e<epoch>:user"); `parse` reads that
    name back. This class is the one encoder and the one parser of those names."""

    user: str = attrs.field(validator=lambda _, __, v: check_key_part(v, "user"))
    app: str | None = attrs.field(validator=lambda _, __, v: _check_app(v))
    epoch: int = attrs.field(validator=lambda _, __, v: _check_count(v, "epoch"))
    period: int | None = attrs.field(default=None)

    @period.validator
    def _check_period(self, _: object, value: int | None) -> None:
        if value is not None:
            _check_count(value, "period")
            if self.app is None:
                raise InputError("period", "None for the per-user scope (periods are per application)", value)

    @classmethod
    def of_app(cls, user: str, app: str, epoch: int, period: int | None = None) -> ScopeKey:
        """The (user, application) scope of `epoch` (and of budget period `period`)."""
        if not isinstance(app, str):
            raise InputError("app", "an application id", type(app).__name__)
        return cls(user, app, epoch, period)

    @classmethod
    def of_user(cls, user: str, epoch: int) -> ScopeKey:
        """The per-user scope across applications of `epoch` (databases written before shares)."""
        return cls(user, None, epoch)

    @property
    def interaction(self) -> str:
        """The stored session's interaction text."""
        if self.app is None:
            return f"e{self.epoch}:user"
        if self.period is None:
            return f"e{self.epoch}:app:{self.app}"
        return f"e{self.epoch}:p{self.period}:app:{self.app}"

    @property
    def session_key(self) -> SessionKey:
        return SessionKey(self.user, self.interaction)

    @classmethod
    def parse(cls, key: SessionKey) -> ScopeKey | None:
        """The scope a stored session holds, or None for a session that is not a runtime scope
        (a `dpmem run` session of the same database)."""
        match = _SCOPE_NAME.fullmatch(key.interaction)
        if match is None:
            return None
        epoch, period, app = match.groups()
        return cls(key.user, app, int(epoch), None if period is None else int(period))


def committed_scopes(
    scopes: Sequence[tuple[Mapping[str, Fraction], Mapping[str, Fraction]]], request: ReleaseRequest
) -> list[dict[str, Fraction]] | None:
    """`committed_charge` for every scope (spent, caps) of one multi-scope charge: the
    ledgers after it, in order, or None when any scope refuses (then none is charged)."""
    after = [committed_charge(spent, caps, request) for spent, caps in scopes]
    if any(scope is None for scope in after):
        return None
    return [scope for scope in after if scope is not None]


def check_scope_keys(key: SessionKey, also: Sequence[SessionKey]) -> tuple[SessionKey, ...]:
    """The scopes of one charge: this session first, then `also`, each once."""
    keys = (key, *also)
    if not all(isinstance(k, SessionKey) for k in keys) or len(set(keys)) != len(keys):
        raise InputError("also", "distinct SessionKeys other than this session's", [str(k) for k in also])
    return keys


def rebound_caps(
    spent: Mapping[str, Fraction], caps: Mapping[str, Fraction], where: str
) -> dict[str, tuple[Fraction, Fraction]]:
    """A session's (spent, cap) per attribute under new caps (an interface change that
    carries the ledgers over, docs/agent.md): a new attribute starts at 0, a removed
    one or a cap below what was spent is refused (C5: L_a <= B_a on every path)."""
    checked = check_caps(caps)
    dropped = sorted(set(spent) - set(checked))
    if dropped:
        raise InputError(f"{where}.caps", "every attribute the ledgers already count", f"no cap for {dropped}")
    out = {a: (spent.get(a, Fraction(0)), cap) for a, cap in checked.items()}
    over = sorted(a for a, (s, cap) in out.items() if s > cap)
    if over:
        raise InputError(f"{where}.caps", "caps at least the spent ledgers (C5)", f"below the ledger for {over}")
    return out


META_PREFIX = "runtime."


def check_meta_key(key: object) -> str:
    """Extra meta rows (the runtime's interface record and budget epochs) live under
    META_PREFIX, apart from the store's own 'schema' and 'fingerprint' rows."""
    if not isinstance(key, str) or not key.startswith(META_PREFIX) or not PRINTABLE_ASCII.issuperset(key):
        raise InputError("meta key", f"printable ASCII text starting with {META_PREFIX!r}", key)
    return key


def checked_rebind(fingerprint: str, meta: Mapping[str, str]) -> dict[str, str]:
    """The arguments of every store's `rebind`, checked before any transaction opens: the new
    fingerprint, and the meta rows under META_PREFIX (as text)."""
    check_fingerprint(fingerprint)
    return {check_meta_key(k): str(v) for k, v in meta.items()}


def grouped_ledgers(
    rows: Sequence[Sequence[object]],
) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
    """(interaction, attribute, spent, cap) rows -> one (interaction, spent, caps) per session."""
    from dpmem_ref.ledger.codecs import fraction_from_text

    out: dict[str, tuple[dict[str, Fraction], dict[str, Fraction]]] = {}
    for interaction, attribute, spent, cap in rows:
        spent_map, caps_map = out.setdefault(str(interaction), ({}, {}))
        spent_map[str(attribute)] = fraction_from_text(spent, "ledgers.spent")
        caps_map[str(attribute)] = fraction_from_text(cap, "ledgers.cap")
    return [(interaction, spent_map, caps_map) for interaction, (spent_map, caps_map) in sorted(out.items())]
