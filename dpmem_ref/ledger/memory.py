"""In-process ledgers (the default): atomic under one lock, forgotten on exit.

The backend primitives of the session template (`dpmem_ref.ledger.session`): the store's lock
is the transaction; there is no chain, and nothing to roll back (every check runs before the
first write).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.codecs import decode_turn
from dpmem_ref.ledger.facts import ReleaseRequest, SessionKey, SessionSnapshot, SlotRelease, release_row
from dpmem_ref.ledger.scopes import check_meta_key
from dpmem_ref.ledger.session import LedgerBackend, Ledgers, TemplateSession

_T = TypeVar("_T")


@attrs.define
class _SessionData:
    """One (user, interaction), guarded by its store's lock."""

    lock: threading.Lock = attrs.field(repr=False)
    caps: dict[str, Fraction]
    ledgers: dict[str, Fraction]
    releases: list[SlotRelease] = attrs.field(factory=list)
    turns: list[tuple[str, TurnRecord]] = attrs.field(factory=list)
    release_ids: set[str] = attrs.field(factory=set)
    turn_ids: set[str] = attrs.field(factory=set)
    seq: list[int] = attrs.field(factory=lambda: [0])  # shared by the store's sessions
    # The store's sessions by key (shared): what a multi-scope charge debits besides this one.
    registry: dict[SessionKey, _SessionData] = attrs.field(factory=dict, repr=False)


class MemoryLedgerStore(LedgerBackend[None, "MemoryLedgerSession"]):
    """In-process ledgers (the default). Atomic under one lock; forgotten on exit."""

    CHAINED = False

    def __init__(self) -> None:
        self._sessions: dict[SessionKey, _SessionData] = {}
        self._lock = threading.Lock()
        self._seq = [0]
        self._fingerprint: str | None = None
        self._meta: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"MemoryLedgerStore(sessions={len(self._sessions)})"

    @property
    def fingerprint(self) -> str | None:
        return self._fingerprint

    # ------------------------------------------------ the session template's primitives

    @property
    def _where(self) -> str:
        return "(memory)"

    def _transaction(self, work: Callable[[None], _T], resolve: Callable[[None], _T | None] | None = None) -> _T:
        with self._lock:
            return work(None)

    def _read_fingerprint(self, tx: None) -> str | None:
        return self._fingerprint

    def _has_history(self, tx: None) -> bool:
        return False  # forgotten on exit: no charge from before a binding can exist

    def _write_fingerprint(self, tx: None, fingerprint: str) -> None:
        self._fingerprint = fingerprint

    def _open_rows(
        self, tx: None, key: SessionKey, caps: dict[str, Fraction]
    ) -> tuple[dict[str, Fraction] | None, bool]:
        data = self._sessions.get(key)
        if data is not None:
            return data.caps, False
        self._sessions[key] = _SessionData(
            lock=self._lock,
            caps=caps,
            ledgers={a: Fraction(0) for a in caps},
            seq=self._seq,
            registry=self._sessions,
        )
        return None, True

    def _session_keys(self, tx: None) -> list[SessionKey]:
        return list(self._sessions)  # in the order they were opened

    def _session_ledgers(self, tx: None, key: SessionKey) -> dict[str, Fraction]:
        return self._sessions[key].ledgers

    def _write_caps(self, tx: None, key: SessionKey, spent: dict[str, Fraction], caps: dict[str, Fraction]) -> None:
        data = self._sessions[key]
        data.ledgers, data.caps = dict(spent), dict(caps)

    def _write_meta(self, tx: None, rows: Mapping[str, str]) -> None:
        self._meta.update(rows)

    def _session(self, key: SessionKey) -> MemoryLedgerSession:
        return MemoryLedgerSession(backend=self, key=key, data=self._sessions[key])

    # ------------------------------------------------ the rest of the store

    def read_meta(self, key: str) -> str | None:
        check_meta_key(key)
        with self._lock:
            return self._meta.get(key)

    def user_ledgers(self, user: str) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
        with self._lock:
            found = [
                (k.interaction, dict(d.ledgers), dict(d.caps)) for k, d in self._sessions.items() if k.user == user
            ]
        return sorted(found, key=lambda row: row[0])

    def close(self) -> None:
        pass


@attrs.frozen
class MemoryLedgerSession(TemplateSession[None]):
    backend: MemoryLedgerStore = attrs.field(repr=False)
    key: SessionKey
    _data: _SessionData = attrs.field(repr=False, alias="data")

    def load(self) -> SessionSnapshot:
        data = self._data
        with data.lock:
            return SessionSnapshot(
                ledgers=tuple(sorted(data.ledgers.items())),
                caps=tuple(sorted(data.caps.items())),
                history=tuple(record for _, record in data.turns),
                releases=tuple(data.releases),
            )

    # ------------------------------------------------ the session template's primitives

    def _release_id_taken(self, tx: None, release_id: str) -> bool:
        return release_id in self._data.release_ids

    def _read_ledgers(self, tx: None, keys: Sequence[SessionKey], lock: bool) -> list[Ledgers]:
        scopes = [self._data] + [_opened(self._data.registry, key) for key in keys[1:]]
        return [(scope.ledgers, scope.caps) for scope in scopes]

    def _write_charge(
        self, tx: None, key: SessionKey, ledgers: dict[str, Fraction], charge_set: frozenset[str]
    ) -> None:
        self._data.registry[key].ledgers = ledgers

    def _insert_release(self, tx: None, request: ReleaseRequest, admitted: bool) -> SlotRelease | None:
        data = self._data
        data.seq[0] += 1
        row = release_row(data.seq[0], request, admitted)
        data.releases.append(row)
        data.release_ids.add(row.release_id)
        return row

    def _insert_turn(self, tx: None, turn_id: str, text: str) -> int | None:
        decoded = decode_turn(text)  # same validation and round trip as the databases
        data = self._data
        if turn_id in data.turn_ids:
            return None
        data.turns.append((turn_id, decoded))
        data.turn_ids.add(turn_id)
        return len(data.turns)


def _opened(registry: Mapping[SessionKey, _SessionData], key: SessionKey) -> _SessionData:
    found = registry.get(key)
    if found is None:
        raise InputError("also", "sessions opened on this store", f"{key.user}/{key.interaction}")
    return found
