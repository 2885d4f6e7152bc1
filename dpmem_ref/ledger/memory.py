"""In-process ledgers (the default): atomic under one lock, forgotten on exit."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from fractions import Fraction

import attrs

from dpmem_ref.interface import TurnRecord
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
    committed_charge,
    id_used_before,
    interface_mismatch,
    release_row,
)
from dpmem_ref.ledger.records import decode_turn, encode_turn


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


class MemoryLedgerStore:
    """In-process ledgers (the default). Atomic under one lock; forgotten on exit."""

    def __init__(self) -> None:
        self._sessions: dict[SessionKey, _SessionData] = {}
        self._lock = threading.Lock()
        self._seq = [0]
        self._fingerprint: str | None = None

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
                    lock=self._lock, caps=checked, ledgers={a: Fraction(0) for a in checked}, seq=self._seq
                )
                self._sessions[key] = data
            else:
                check_same_caps(data.caps, checked)
        return MemoryLedgerSession(key=key, data=data)

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

    def charge_and_record(self, request: ReleaseRequest) -> ReleaseOutcome:
        data = self._data
        with data.lock:
            if request.release_id in data.release_ids:
                raise id_used_before("release_id", request.release_id)
            after = committed_charge(data.ledgers, data.caps, request)
            data.seq[0] += 1
            release = release_row(data.seq[0], request, after is not None)
            if after is not None:
                data.ledgers = after
            data.releases.append(release)
            data.release_ids.add(release.release_id)
            return ReleaseOutcome.of(release, data.ledgers)

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        check_turn_id(turn_id)
        decoded = decode_turn(encode_turn(record))  # same validation and round trip as the databases
        data = self._data
        with data.lock:
            if turn_id in data.turn_ids:
                raise id_used_before("turn_id", turn_id)
            data.turns.append((turn_id, decoded))
            data.turn_ids.add(turn_id)
