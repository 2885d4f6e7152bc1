"""The session of the SQLite ledger store (`dpmem_ref.ledger.sqlite`): incremental loads, and the
charge and the turn record, each one BEGIN IMMEDIATE transaction (C5 re-checked under the write lock)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.chain import (
    charge_body,
    turn_body,
)
from dpmem_ref.ledger.contract import (
    ReleaseOutcome,
    ReleaseRequest,
    SessionKey,
    SessionSnapshot,
    check_turn_id,
    fraction_to_text,
    id_used_before,
    release_row,
)
from dpmem_ref.ledger.records import LoadCache, encode_turn, release_values
from dpmem_ref.ledger.scopes import check_scope_keys, committed_scopes
from dpmem_ref.ledger.sqlite_schema import (
    append_event,
    ledger_rows,
)

if TYPE_CHECKING:
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore


@attrs.frozen
class SQLiteLedgerSession:
    store: SQLiteLedgerStore = attrs.field(repr=False)
    key: SessionKey
    _cache: LoadCache = attrs.field(factory=lambda: LoadCache(), init=False, eq=False, repr=False)

    def load(self) -> SessionSnapshot:
        with self._cache.lock:  # the cache below is shared by threads
            return self.store.retrying(self._load_once)

    def _load_once(self) -> SessionSnapshot:
        # Rows are append-only and numbered in commit order (writes are serialised), so
        # each load reads only the rows committed since the previous one.
        key = self.key
        cache = self._cache
        with self.store.reading() as connection:
            spent, caps = ledger_rows(connection, key)
            releases = connection.execute(
                "SELECT seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
                "FROM releases WHERE user = ? AND interaction = ? AND seq > ? ORDER BY seq",
                (key.user, key.interaction, cache.release_seq),
            ).fetchall()
            turns = connection.execute(
                "SELECT seq, record FROM turns WHERE user = ? AND interaction = ? AND seq > ? ORDER BY seq",
                (key.user, key.interaction, cache.turn_seq),
            ).fetchall()
        return cache.snapshot(releases, turns, spent, caps)

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        key = self.key
        store = self.store
        keys = check_scope_keys(key, also)
        with store.transaction() as connection:  # BEGIN IMMEDIATE: holds the write lock
            scopes = [ledger_rows(connection, k) for k in keys]
            charged = committed_scopes(scopes, request)
            after = None if charged is None else charged[0]
            for scope_key, ledgers in zip(keys, charged or (), strict=False):
                connection.executemany(
                    "UPDATE ledgers SET spent = ? WHERE user = ? AND interaction = ? AND attribute = ?",
                    [
                        (fraction_to_text(ledgers[a]), scope_key.user, scope_key.interaction, a)
                        for a in sorted(request.charge_set)
                    ],
                )
            row = release_row(0, request, after is not None)
            try:
                cursor = connection.execute(
                    "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
                    "charge_set, epsilon) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    release_values(key, row),  # sqlite3 binds the bool admitted as 1 / 0
                )
            except sqlite3.IntegrityError:
                raise id_used_before("release_id", request.release_id) from None
            row = attrs.evolve(row, seq=int(cursor.lastrowid or 0))
            committed = charged if charged is not None else [ledgers for ledgers, _ in scopes]
            others = list(zip(keys[1:], committed[1:], strict=True))  # the other scopes debited
            mark = append_event(connection, store.key, "charge", charge_body(key, row, committed[0], others))
            store.fault("charge:inside")
        store.committed(mark)
        store.fault("charge:committed")
        return ReleaseOutcome.of(row, committed[0], committed[1:])

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        check_turn_id(turn_id)
        text = encode_turn(record)
        with self.store.transaction() as connection:
            try:
                cursor = connection.execute(
                    "INSERT INTO turns (user, interaction, turn_id, record) VALUES (?, ?, ?, ?)",
                    (self.key.user, self.key.interaction, turn_id, text),
                )
            except sqlite3.IntegrityError:
                raise id_used_before("turn_id", turn_id) from None
            body = turn_body(self.key, int(cursor.lastrowid or 0), turn_id, text)
            mark = append_event(connection, self.store.key, "turn", body)
        self.store.committed(mark)
