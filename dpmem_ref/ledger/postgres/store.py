"""Ledgers in a PostgreSQL database shared by agent replicas on several hosts.

Every charge is one transaction: `SELECT ... FOR UPDATE` locks the session's ledger rows
(in attribute order, so transactions never deadlock), the C5 re-check runs on those
locked, committed values, and the charge and the release row commit together. Writes of
one session therefore serialise, so its release and turn rows are numbered in commit
order (the incremental load cache relies on it). Loads read one REPEATABLE READ snapshot.

Serialization failures and deadlocks are retried a bounded number of times. A lost
connection (server restart, failover) is reconnected within `reconnect_timeout_s`; an
ambiguous COMMIT is resolved by looking the release (or turn) id up before retrying, so a
charge is never applied twice and never lost. Every driver error becomes one
`LedgerStoreError` line naming the database (password removed).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pg_errors

from dpmem_ref.ledger.anchor import anchor_path, read_anchor, write_anchor
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment
from dpmem_ref.ledger.checkpoint import Checkpoint, LiveVerification, Served
from dpmem_ref.ledger.codecs import fraction_from_text, fraction_to_text
from dpmem_ref.ledger.contract import FaultHook, LedgerStoreError
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.postgres.schema import (
    CONNECT_TIMEOUT_S,
    append_event,
    chain_head,
    create_schema,
    describe_postgres_error,
    holds,
    identity,
    lock_chain,
    locked_ledgers,
    missing_anchor,
    read_anchor_row,
    read_tail,
    rewound,
    store_checkpoint,
    verify_on_open,
    write_anchor_row,
)
from dpmem_ref.ledger.postgres.session import PostgresLedgerSession
from dpmem_ref.ledger.scopes import check_meta_key, grouped_ledgers
from dpmem_ref.ledger.session import LedgerBackend
from dpmem_ref.ledger.url_forms import SecretURL, check_postgres_url, redact_url

_T = TypeVar("_T")
_JITTER = random.SystemRandom()
_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)
Work = Callable[[psycopg.Connection[Any]], _T]


class PostgresLedgerStore(LedgerBackend[psycopg.Connection[Any], PostgresLedgerSession]):
    """One PostgreSQL database of ledgers (extra `dpmem-ref[postgres]`, psycopg 3).

    `fault_hook` (tests only) is called with "charge:inside" after the charge is written
    and before COMMIT, and with "charge:committed" right after COMMIT.
    """

    def __init__(
        self,
        url: str,
        retries: int = 16,
        reconnect_timeout_s: float = 30.0,
        connect_timeout_s: int = CONNECT_TIMEOUT_S,
        fault_hook: FaultHook | None = None,
        key: ChainKey | None = None,
    ) -> None:
        self._url = SecretURL(check_postgres_url(url))  # prints as its redaction, like `name`
        self.key = key_from_environment() if key is None else key
        self.name = redact_url(url)
        self._retries = retries
        self._reconnect_timeout_s = reconnect_timeout_s
        self._connect_timeout_s = connect_timeout_s
        self._fault_hook = fault_hook
        self._lock = threading.RLock()
        self._connection: psycopg.Connection[Any] | None = None
        self._pid = -1
        self._ever_connected = False
        self._checkpoint: Checkpoint | None = None  # verified on open, not yet stored
        self._live: LiveVerification | None = None  # what is verified, moved forward before serving
        self.run(self._create_schema)
        self.identity = self.run(identity)
        # the anchor: DPMEM_LEDGER_ANCHOR_DIR/<identity>.anchor when set (out of the database's
        # reach), else the database's own dpmem_anchor row (docs/durability.md, threat model)
        self.anchor_file = anchor_path(None, self.identity)
        self.run(self._check_anchor_on_open)
        self.run(self._verify_on_open, read_only=True)  # one snapshot, writes nothing

    def _verify_on_open(self, tx: psycopg.Connection[Any]) -> None:
        """Verify from the last checkpoint to the head (O(new events)): an edited ledger is refused, never served."""
        try:
            verified, stored = verify_on_open(tx, self.key, self.identity)
        except LedgerStoreError as error:
            raise LedgerStoreError(
                f"ledger database {self.name}: refused, {error} (dpmem ledger verify URL names the row)"
            ) from None
        self._checkpoint = None if stored else verified.checkpoint()
        self._live = LiveVerification(self.key, self.name, verified)

    def _verify_served(
        self, tx: psycopg.Connection[Any], scopes: Sequence[Served], meta: Mapping[str, str | None] | None = None
    ) -> None:
        """Before rows are served or a charge admitted, in the same snapshot (see the SQLite twin)."""
        if self._live is not None:
            self._live.check(lambda seq, release, turn: read_tail(tx, seq, release, turn), scopes, meta)

    @property
    def _anchor_where(self) -> str:
        return str(self.anchor_file) if self.anchor_file is not None else f"{self.name} dpmem_anchor"

    def _read_anchor(self, tx: psycopg.Connection[Any]) -> HighWater | None:
        if self.anchor_file is not None:
            return read_anchor(self.anchor_file, self.key, self.identity)
        return read_anchor_row(tx, self.name, self.key, self.identity)

    def _check_anchor_on_open(self, tx: psycopg.Connection[Any]) -> None:
        """Fail closed: a chain past its genesis needs an anchor, and must hold its event."""
        lock_chain(tx)
        head = chain_head(tx)
        try:
            mark = self._read_anchor(tx)
        except LedgerStoreError as error:
            raise LedgerStoreError(
                f"ledger database {self.name}: refused, {error}; a live database whose anchor was replaced: "
                "dpmem ledger reanchor URL"
            ) from None
        if mark is None:
            if head.seq > 1:
                raise missing_anchor(self.name, self._anchor_where)
            self._set_anchor(tx, head)
        elif not holds(tx, mark):
            raise rewound(self.name, mark, self._anchor_where)

    def _set_anchor(self, tx: psycopg.Connection[Any], mark: HighWater) -> None:
        if self.anchor_file is not None:
            write_anchor(self.anchor_file, self.key, self.identity, mark)
        else:
            write_anchor_row(tx, self.key, self.identity, mark)

    def __repr__(self) -> str:
        return f"PostgresLedgerStore(url={self.name!r})"

    @property
    def url(self) -> str:
        """The URL itself, to reopen the same database; never printed (`name` is its redaction)."""
        return self._url.reveal()

    def _failure(self, error: BaseException) -> LedgerStoreError:
        return LedgerStoreError(f"ledger database {self.name}: {describe_postgres_error(error)}")

    def _create_schema(self, connection: psycopg.Connection[Any]) -> None:
        create_schema(connection, self.name, self.key)

    def connect(self) -> psycopg.Connection[Any]:
        """This process's connection (never shared across fork(): reopened in a child)."""
        if self._connection is None or self._pid != os.getpid() or self._connection.closed:
            self._connection = None
            self._connection = psycopg.connect(
                self._url.reveal(), autocommit=True, connect_timeout=self._connect_timeout_s
            )
            self._pid = os.getpid()
            self._ever_connected = True
        return self._connection

    def _drop_connection(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            try:
                self._connection.close()
            except psycopg.Error:
                pass
        self._connection = None

    def run(self, work: Work[_T], resolve: Work[_T | None] | None = None, read_only: bool = False) -> _T:
        """`work` in one transaction; retries serialization failures (bounded) and, after a
        lost connection, reconnects and asks `resolve` whether the lost COMMIT happened."""
        attempts = 0
        deadline: float | None = None
        lost = False
        with self._lock:
            while True:
                try:
                    connection = self.connect()
                    if lost and resolve is not None:
                        with connection.transaction():
                            done = resolve(connection)
                        if done is not None:
                            return done
                    with connection.transaction():
                        if read_only:
                            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                        return work(connection)
                except _RETRYABLE:
                    attempts += 1
                    if attempts > self._retries:
                        raise LedgerStoreError(
                            f"ledger database {self.name}: still conflicting after {self._retries} retries"
                        ) from None
                    time.sleep(_JITTER.uniform(0, 0.002 * attempts))
                except psycopg.OperationalError as error:
                    current = self._connection
                    if not self._ever_connected or (current is not None and not current.broken and not current.closed):
                        raise self._failure(error) from None  # bad URL, credentials or database; or a query error
                    self._drop_connection()  # lost (server restart, failover): reconnect, then resolve
                    if deadline is None:
                        deadline = time.monotonic() + self._reconnect_timeout_s
                    if time.monotonic() >= deadline:
                        raise self._failure(error) from None
                    lost = True
                    time.sleep(0.05)
                except psycopg.Error as error:
                    raise self._failure(error) from None

    @property
    def fingerprint(self) -> str | None:
        row = self.run(lambda c: c.execute("SELECT value FROM dpmem_meta WHERE key = 'fingerprint'").fetchone())
        return None if row is None else str(row[0])

    # ------------------------------------------------ the session template's primitives

    @property
    def _where(self) -> str:
        return self.name

    def _transaction(self, work: Work[_T], resolve: Work[_T | None] | None = None) -> _T:
        return self.run(work, resolve)

    def _lock_writes(self, tx: psycopg.Connection[Any]) -> None:
        lock_chain(tx)

    def _read_fingerprint(self, tx: psycopg.Connection[Any]) -> str | None:
        row = tx.execute("SELECT value FROM dpmem_meta WHERE key = 'fingerprint'").fetchone()
        return None if row is None else str(row[0])

    def _has_history(self, tx: psycopg.Connection[Any]) -> bool:
        history = ("dpmem_releases", "dpmem_turns")  # ledgers at zero carry no charge to misattribute
        return any(tx.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in history)  # noqa: S608

    def _write_fingerprint(self, tx: psycopg.Connection[Any], fingerprint: str) -> None:
        self._write_meta(tx, {"fingerprint": fingerprint})

    def _open_rows(
        self, tx: psycopg.Connection[Any], key: SessionKey, caps: dict[str, Fraction]
    ) -> tuple[dict[str, Fraction] | None, bool]:
        created = tx.execute(
            "INSERT INTO dpmem_ledgers (user_name, interaction, attribute, spent, cap) "
            "SELECT %s, %s, a, '0/1', c FROM unnest(%s::text[], %s::text[]) AS t(a, c) ON CONFLICT DO NOTHING",
            (key.user, key.interaction, sorted(caps), [fraction_to_text(caps[a]) for a in sorted(caps)]),
        )
        stored = {
            str(a): fraction_from_text(c, "ledgers.cap")
            for a, c in tx.execute(
                "SELECT attribute, cap FROM dpmem_ledgers WHERE user_name = %s AND interaction = %s",
                (key.user, key.interaction),
            )
        }
        return stored, bool(created.rowcount)

    def _session_keys(self, tx: psycopg.Connection[Any]) -> list[SessionKey]:
        found = tx.execute(
            "SELECT DISTINCT user_name, interaction FROM dpmem_ledgers ORDER BY user_name, interaction"
        ).fetchall()  # the database's collation orders the rebind event's sessions (kept as it was)
        return [SessionKey(user=str(user), interaction=str(interaction)) for user, interaction in found]

    def _session_ledgers(self, tx: psycopg.Connection[Any], key: SessionKey) -> dict[str, Fraction]:
        return locked_ledgers(tx, key, lock=True)[0]

    def _write_caps(
        self, tx: psycopg.Connection[Any], key: SessionKey, spent: dict[str, Fraction], caps: dict[str, Fraction]
    ) -> None:
        with tx.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO dpmem_ledgers (user_name, interaction, attribute, spent, cap) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (user_name, interaction, attribute) "
                "DO UPDATE SET cap = EXCLUDED.cap",
                [
                    (key.user, key.interaction, a, fraction_to_text(spent[a]), fraction_to_text(caps[a]))
                    for a in sorted(caps)
                ],
            )

    def _write_meta(self, tx: psycopg.Connection[Any], rows: Mapping[str, str]) -> None:
        with tx.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO dpmem_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                sorted(rows.items()),
            )

    def _append_chain(self, tx: psycopg.Connection[Any], kind: str, body: str) -> HighWater:
        """Under the chain lock: the chain must still hold the anchor's event (a database rewound
        or truncated while this store runs refuses the commit, before its release); then the
        event, and (anchor row) the anchor moves with the head in the same transaction."""
        mark = self._read_anchor(tx)
        if mark is None:
            raise missing_anchor(self.name, self._anchor_where)
        if not holds(tx, mark):
            raise rewound(self.name, mark, self._anchor_where)
        if self._checkpoint is not None:  # what the open verified, stored with the first write
            store_checkpoint(tx, self.key, self.identity, self._checkpoint)
        head = append_event(tx, self.key, kind, body)
        if self.anchor_file is None:
            write_anchor_row(tx, self.key, self.identity, head)
        return head

    def _committed(self, mark: HighWater | None) -> None:
        if mark is not None:
            self._checkpoint = None  # stored by the transaction that just committed its event
        if mark is not None and self.anchor_file is not None:
            write_anchor(self.anchor_file, self.key, self.identity, mark)

    def _session(self, key: SessionKey) -> PostgresLedgerSession:
        return PostgresLedgerSession(backend=self, key=key)

    # ------------------------------------------------ the rest of the store

    def read_meta(self, key: str) -> str | None:
        check_meta_key(key)

        def read(c: psycopg.Connection[Any]) -> str | None:
            row = c.execute("SELECT value FROM dpmem_meta WHERE key = %s", (key,)).fetchone()
            value = None if row is None else str(row[0])
            self._verify_served(c, [], {key: value})
            return value

        return self.run(read, read_only=True)

    def user_ledgers(self, user: str) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
        def read(c: psycopg.Connection[Any]) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
            rows = c.execute(
                "SELECT interaction, attribute, spent, cap FROM dpmem_ledgers WHERE user_name = %s ORDER BY interaction",
                (user,),
            ).fetchall()
            grouped = grouped_ledgers(rows)
            self._verify_served(c, [(SessionKey(user, i), spent, caps, None) for i, spent, caps in grouped])
            return grouped

        return self.run(read, read_only=True)

    def close(self) -> None:
        with self._lock:
            self._drop_connection()
