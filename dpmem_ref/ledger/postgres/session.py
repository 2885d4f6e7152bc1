"""The session of the PostgreSQL ledger store (`dpmem_ref.ledger.postgres`): loads from one REPEATABLE
READ snapshot, and the primitives under the session template (`dpmem_ref.ledger.session`) whose charge
and turn record are each one transaction with the session's ledger rows locked in attribute order (C5
re-checked on the locked, committed values), resolved by id after a lost COMMIT answer."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs
import psycopg
from psycopg import errors as pg_errors

from dpmem_ref.ledger.checkpoint import served_rows
from dpmem_ref.ledger.codecs import LoadCache, decode_release, fraction_to_text, release_values
from dpmem_ref.ledger.facts import ReleaseRequest, SessionKey, SessionSnapshot, SlotRelease, release_row
from dpmem_ref.ledger.postgres.schema import locked_ledgers
from dpmem_ref.ledger.session import Ledgers, TemplateSession

if TYPE_CHECKING:
    from dpmem_ref.ledger.postgres.store import PostgresLedgerStore


_RELEASE_COLUMNS = "seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon"


@attrs.frozen
class PostgresLedgerSession(TemplateSession[psycopg.Connection[Any]]):
    backend: PostgresLedgerStore = attrs.field(repr=False)
    key: SessionKey
    _cache: LoadCache = attrs.field(factory=lambda: LoadCache(), init=False, eq=False, repr=False)

    def load(self) -> SessionSnapshot:
        with self._cache.lock:
            return self.backend.run(self._load_once, read_only=True)

    def _load_once(self, connection: psycopg.Connection[Any]) -> SessionSnapshot:
        key, cache = self.key, self._cache
        spent, caps = locked_ledgers(connection, key, lock=False)
        releases = connection.execute(
            f"SELECT {_RELEASE_COLUMNS} FROM dpmem_releases "
            "WHERE user_name = %s AND interaction = %s AND seq > %s ORDER BY seq",
            (key.user, key.interaction, cache.release_seq),
        ).fetchall()
        turns = connection.execute(
            "SELECT seq, turn_id, record FROM dpmem_turns "
            "WHERE user_name = %s AND interaction = %s AND seq > %s ORDER BY seq",
            (key.user, key.interaction, cache.turn_seq),
        ).fetchall()
        served = served_rows(cache.served, key, releases, turns)  # checked before serving, in this snapshot
        self.backend._verify_served(connection, [(key, spent, caps, served)])
        snapshot = cache.snapshot(releases, turns, spent, caps)
        cache.served = served
        return snapshot

    # ------------------------------------------------ the session template's primitives

    def _read_ledgers(self, tx: psycopg.Connection[Any], keys: Sequence[SessionKey], lock: bool) -> list[Ledgers]:
        if not lock:
            return [locked_ledgers(tx, k, lock=False) for k in keys]
        # Rows are locked scope by scope in key order, so two multi-scope charges never deadlock.
        locked = {k: locked_ledgers(tx, k, lock=True) for k in sorted(keys, key=lambda k: (k.user, k.interaction))}
        return [locked[k] for k in keys]

    def _write_charge(
        self, tx: psycopg.Connection[Any], key: SessionKey, ledgers: dict[str, Fraction], charge_set: frozenset[str]
    ) -> None:
        with tx.cursor() as cursor:
            cursor.executemany(
                "UPDATE dpmem_ledgers SET spent = %s WHERE user_name = %s AND interaction = %s AND attribute = %s",
                [(fraction_to_text(ledgers[a]), key.user, key.interaction, a) for a in sorted(charge_set)],
            )

    def _insert_release(
        self, tx: psycopg.Connection[Any], request: ReleaseRequest, admitted: bool
    ) -> SlotRelease | None:
        row = release_row(0, request, admitted)
        try:
            inserted = tx.execute(
                "INSERT INTO dpmem_releases (user_name, interaction, release_id, turn_id, slot_index, slot, view, "
                "admitted, charge_set, epsilon) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
                release_values(self.key, row),
            ).fetchone()
        except pg_errors.UniqueViolation:
            return None
        return attrs.evolve(row, seq=int(inserted[0]) if inserted else 0)

    def _find_release(self, tx: psycopg.Connection[Any], release_id: str) -> SlotRelease | None:
        found = tx.execute(f"SELECT {_RELEASE_COLUMNS} FROM dpmem_releases WHERE release_id = %s", (release_id,))
        row = found.fetchone()
        return None if row is None else decode_release(row)

    def _insert_turn(self, tx: psycopg.Connection[Any], turn_id: str, text: str) -> int | None:
        key = self.key
        locked_ledgers(tx, key, lock=True)  # turns of one session commit in order
        try:
            inserted = tx.execute(
                "INSERT INTO dpmem_turns (user_name, interaction, turn_id, record) VALUES (%s, %s, %s, %s) "
                "RETURNING seq",
                (key.user, key.interaction, turn_id, text),
            ).fetchone()
        except pg_errors.UniqueViolation:
            return None
        return int(inserted[0]) if inserted else 0

    def _turn_committed(self, tx: psycopg.Connection[Any], turn_id: str) -> bool:
        return tx.execute("SELECT 1 FROM dpmem_turns WHERE turn_id = %s", (turn_id,)).fetchone() is not None
