"""In-process ledgers (the default): atomic under one lock, forgotten on exit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.contract import (
    ReleaseOutcome,
    ReleaseRequest,
    SessionKey,
    SessionSnapshot,
    SlotRelease,
    check_caps,
    check_fingerprint,
    check_same_caps,
    check_turn_id,
    id_used_before,
    interface_mismatch,
    release_row,
)
from dpmem_ref.ledger.records import decode_turn, encode_turn
from dpmem_ref.ledger.scopes import check_meta_key, check_scope_keys, checked_rebind, committed_scopes, rebound_caps


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


class MemoryLedgerStore:
    """In-process ledgers (the default). Atomic under one lock; forgotten on exit."""

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

    def open_session(
        self, user: str, interaction: str, caps: Mapping[str, Fraction], fingerprint: str | None = None
    ) -> MemoryLedgerSession:
        key = SessionKey(user=user, interaction=interaction)
        checked = check_caps(caps)
        if fingerprint is not None:
            check_fingerprint(fingerprint)
        with self._lock:
            if fingerprint is not None:
                if self._fingerprint is None:
                    self._fingerprint = fingerprint
                elif self._fingerprint != fingerprint:
                    raise interface_mismatch("(memory)", self._fingerprint, fingerprint)
            data = self._sessions.get(key)
            if data is None:
                data = _SessionData(
                    lock=self._lock,
                    caps=checked,
                    ledgers={a: Fraction(0) for a in checked},
                    seq=self._seq,
                    registry=self._sessions,
                )
                self._sessions[key] = data
            else:
                check_same_caps(data.caps, checked)
        return MemoryLedgerSession(key=key, data=data)

    def read_meta(self, key: str) -> str | None:
        check_meta_key(key)
        with self._lock:
            return self._meta.get(key)

    def rebind(
        self,
        expected: str | None,
        fingerprint: str,
        meta: Mapping[str, str],
        caps_for: Callable[[SessionKey], Mapping[str, Fraction] | None] | None = None,
    ) -> None:
        rows = checked_rebind(fingerprint, meta)
        with self._lock:
            if self._fingerprint != expected:
                raise interface_mismatch("(memory)", self._fingerprint or "", fingerprint)
            updates = {}
            for key, data in self._sessions.items():  # all checked before anything changes
                caps = None if caps_for is None else caps_for(key)
                if caps is not None:
                    updates[key] = rebound_caps(data.ledgers, caps, f"session {key.user}/{key.interaction}")
            for key, table in updates.items():
                data = self._sessions[key]
                data.ledgers = {a: s for a, (s, _) in table.items()}
                data.caps = {a: c for a, (_, c) in table.items()}
            self._fingerprint = fingerprint
            self._meta.update(rows)

    def user_ledgers(self, user: str) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
        with self._lock:
            found = [
                (k.interaction, dict(d.ledgers), dict(d.caps)) for k, d in self._sessions.items() if k.user == user
            ]
        return sorted(found, key=lambda row: row[0])

    def close(self) -> None:
        pass


@attrs.frozen
class MemoryLedgerSession:
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

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        data = self._data
        keys = check_scope_keys(self.key, also)
        with data.lock:
            if request.release_id in data.release_ids:
                raise id_used_before("release_id", request.release_id)
            scopes = [data] + [_opened(data.registry, key) for key in keys[1:]]
            after = committed_scopes([(scope.ledgers, scope.caps) for scope in scopes], request)
            data.seq[0] += 1
            release = release_row(data.seq[0], request, after is not None)
            if after is not None:
                for scope, ledgers in zip(scopes, after, strict=True):
                    scope.ledgers = ledgers
            data.releases.append(release)
            data.release_ids.add(release.release_id)
            return ReleaseOutcome.of(release, data.ledgers, [scope.ledgers for scope in scopes[1:]])

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        check_turn_id(turn_id)
        decoded = decode_turn(encode_turn(record))  # same validation and round trip as the databases
        data = self._data
        with data.lock:
            if turn_id in data.turn_ids:
                raise id_used_before("turn_id", turn_id)
            data.turns.append((turn_id, decoded))
            data.turn_ids.add(turn_id)


def _opened(registry: Mapping[SessionKey, _SessionData], key: SessionKey) -> _SessionData:
    found = registry.get(key)
    if found is None:
        raise InputError("also", "sessions opened on this store", f"{key.user}/{key.interaction}")
    return found
