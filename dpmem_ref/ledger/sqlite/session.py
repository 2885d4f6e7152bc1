"""The session of the SQLite ledger store (`dpmem_ref.ledger.sqlite`): incremental loads, and the
primitives under the session template (`dpmem_ref.ledger.session`) whose charge and turn record are
each one BEGIN IMMEDIATE transaction (C5 re-checked under the write lock)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import attrs

from dpmem_ref.ledger.checkpoint import served_rows
from dpmem_ref.ledger.codecs import LoadCache, fraction_to_text, release_values
from dpmem_ref.ledger.facts import ReleaseRequest, SessionKey, SessionSnapshot, SlotRelease, release_row
from dpmem_ref.ledger.session import Ledgers, TemplateSession
from dpmem_ref.ledger.sqlite.schema import ledger_rows

if TYPE_CHECKING:
    from dpmem_ref.ledger.sqlite.store import SQLiteLedgerStore


@attrs.frozen
class SQLiteLedgerSession(TemplateSession[sqlite3.Connection]):
    backend: SQLiteLedgerStore = attrs.field(repr=False)
    key: SessionKey
    _cache: LoadCache = attrs.field(factory=lambda: LoadCache(), init=False, eq=False, repr=False)

    def load(self) -> SessionSnapshot:
        with self._cache.lock:  # the cache below is shared by threads
            return self.backend.retrying(self._load_once)

    def _load_once(self) -> SessionSnapshot:
        # Rows are append-only and numbered in commit order (writes are serialised), so
        # each load reads only the rows committed since the previous one; before they are
        # served, the scope's ledgers and every row served so far are checked against the
        # chain as verified (`_verify_served`), in the same snapshot.
        key = self.key
        cache = self._cache
        with self.backend.reading() as connection:
            spent, caps = ledger_rows(connection, key)
            releases = connection.execute(
                "SELECT seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
                "FROM releases WHERE user = ? AND interaction = ? AND seq > ? ORDER BY seq",
                (key.user, key.interaction, cache.release_seq),
            ).fetchall()
            turns = connection.execute(
                "SELECT seq, turn_id, record FROM turns WHERE user = ? AND interaction = ? AND seq > ? ORDER BY seq",
                (key.user, key.interaction, cache.turn_seq),
            ).fetchall()
            served = served_rows(cache.served, key, releases, turns)
            self.backend._verify_served(connection, [(key, spent, caps, served)])
        snapshot = cache.snapshot(releases, turns, spent, caps)
        cache.served = served
        return snapshot

    # ------------------------------------------------ the session template's primitives

    def _read_ledgers(self, tx: sqlite3.Connection, keys: Sequence[SessionKey], lock: bool) -> list[Ledgers]:
        return [ledger_rows(tx, k) for k in keys]  # BEGIN IMMEDIATE already holds the write lock

    def _write_charge(
        self, tx: sqlite3.Connection, key: SessionKey, ledgers: dict[str, Fraction], charge_set: frozenset[str]
    ) -> None:
        tx.executemany(
            "UPDATE ledgers SET spent = ? WHERE user = ? AND interaction = ? AND attribute = ?",
            [(fraction_to_text(ledgers[a]), key.user, key.interaction, a) for a in sorted(charge_set)],
        )

    def _insert_release(self, tx: sqlite3.Connection, request: ReleaseRequest, admitted: bool) -> SlotRelease | None:
        row = release_row(0, request, admitted)
        try:
            cursor = tx.execute(
                "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
                "charge_set, epsilon) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                release_values(self.key, row),  # sqlite3 binds the bool admitted as 1 / 0
            )
        except sqlite3.IntegrityError:
            return None
        return attrs.evolve(row, seq=int(cursor.lastrowid or 0))

    def _insert_turn(self, tx: sqlite3.Connection, turn_id: str, text: str) -> int | None:
        try:
            cursor = tx.execute(
                "INSERT INTO turns (user, interaction, turn_id, record) VALUES (?, ?, ?, ?)",
                (self.key.user, self.key.interaction, turn_id, text),
            )
        except sqlite3.IntegrityError:
            return None
        return int(cursor.lastrowid or 0)
