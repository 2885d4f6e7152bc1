"""The session of the PostgreSQL ledger store (`dpmem_ref.ledger.postgres`): loads from one REPEATABLE
READ snapshot, and the charge and the turn record, each one transaction with the session's ledger
rows locked in attribute order (C5 re-checked on the locked, committed values)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import psycopg
from psycopg import errors as pg_errors

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
from dpmem_ref.ledger.postgres_schema import (
    append_event,
    lock_chain,
    locked_ledgers,
)
from dpmem_ref.ledger.records import LoadCache, decode_release, encode_turn, release_values
from dpmem_ref.ledger.scopes import check_scope_keys, committed_scopes

if TYPE_CHECKING:
    from dpmem_ref.ledger.postgres import PostgresLedgerStore


_RELEASE_COLUMNS = "seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon"


@attrs.frozen
class PostgresLedgerSession:
    store: PostgresLedgerStore = attrs.field(repr=False)
    key: SessionKey
    _cache: LoadCache = attrs.field(factory=lambda: LoadCache(), init=False, eq=False, repr=False)

    def load(self) -> SessionSnapshot:
        with self._cache.lock:
            return self.store.run(self._load_once, read_only=True)

    def _load_once(self, connection: psycopg.Connection[Any]) -> SessionSnapshot:
        key, cache = self.key, self._cache
        spent, caps = locked_ledgers(connection, key, lock=False)
        releases = connection.execute(
            f"SELECT {_RELEASE_COLUMNS} FROM dpmem_releases "
            "WHERE user_name = %s AND interaction = %s AND seq > %s ORDER BY seq",
            (key.user, key.interaction, cache.release_seq),
        ).fetchall()
        turns = connection.execute(
            "SELECT seq, record FROM dpmem_turns WHERE user_name = %s AND interaction = %s AND seq > %s ORDER BY seq",
            (key.user, key.interaction, cache.turn_seq),
        ).fetchall()
        return cache.snapshot(releases, turns, spent, caps)

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        key, store = self.key, self.store
        keys = check_scope_keys(key, also)
        # Rows are locked scope by scope in key order, so two multi-scope charges never deadlock.
        lock_order = sorted(keys, key=lambda k: (k.user, k.interaction))

        def work(connection: psycopg.Connection[Any]) -> ReleaseOutcome:
            lock_chain(connection)
            locked = {k: locked_ledgers(connection, k, lock=True) for k in lock_order}  # the scopes' write locks
            scopes = [locked[k] for k in keys]
            charged = committed_scopes(scopes, request)
            after = None if charged is None else charged[0]
            for scope_key, ledgers in zip(keys, charged or (), strict=False):
                with connection.cursor() as cursor:
                    cursor.executemany(
                        "UPDATE dpmem_ledgers SET spent = %s WHERE user_name = %s AND interaction = %s "
                        "AND attribute = %s",
                        [
                            (fraction_to_text(ledgers[a]), scope_key.user, scope_key.interaction, a)
                            for a in sorted(request.charge_set)
                        ],
                    )
            row = release_row(0, request, after is not None)
            try:
                inserted = connection.execute(
                    "INSERT INTO dpmem_releases (user_name, interaction, release_id, turn_id, slot_index, slot, view, "
                    "admitted, charge_set, epsilon) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
                    release_values(key, row),
                ).fetchone()
            except pg_errors.UniqueViolation:
                raise id_used_before("release_id", request.release_id) from None
            row = attrs.evolve(row, seq=int(inserted[0]) if inserted else 0)
            committed = charged if charged is not None else [ledgers for ledgers, _ in scopes]
            others = list(zip(keys[1:], committed[1:], strict=True))  # the other scopes debited
            append_event(connection, store.key, "charge", charge_body(key, row, committed[0], others))
            store.fault("charge:inside")
            return ReleaseOutcome.of(row, committed[0], committed[1:])

        def resolve(connection: psycopg.Connection[Any]) -> ReleaseOutcome | None:
            """After a lost connection: did the COMMIT happen? Then that is the outcome."""
            found = connection.execute(
                f"SELECT {_RELEASE_COLUMNS} FROM dpmem_releases WHERE release_id = %s", (request.release_id,)
            ).fetchone()
            if found is None:
                return None
            committed = [locked_ledgers(connection, k, lock=False)[0] for k in keys]
            return ReleaseOutcome.of(decode_release(found), committed[0], committed[1:])

        outcome = store.run(work, resolve)
        store.fault("charge:committed")
        return outcome

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        check_turn_id(turn_id)
        text = encode_turn(record)
        key = self.key

        def work(connection: psycopg.Connection[Any]) -> bool:
            lock_chain(connection)
            locked_ledgers(connection, key, lock=True)  # turns of one session commit in order
            try:
                inserted = connection.execute(
                    "INSERT INTO dpmem_turns (user_name, interaction, turn_id, record) VALUES (%s, %s, %s, %s) "
                    "RETURNING seq",
                    (key.user, key.interaction, turn_id, text),
                ).fetchone()
            except pg_errors.UniqueViolation:
                raise id_used_before("turn_id", turn_id) from None
            seq = int(inserted[0]) if inserted else 0
            append_event(connection, self.store.key, "turn", turn_body(key, seq, turn_id, text))
            return True

        def resolve(connection: psycopg.Connection[Any]) -> bool | None:
            found = connection.execute("SELECT 1 FROM dpmem_turns WHERE turn_id = %s", (turn_id,)).fetchone()
            return True if found else None

        self.store.run(work, resolve)
