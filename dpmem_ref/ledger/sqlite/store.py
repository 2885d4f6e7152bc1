"""Ledgers in one SQLite file shared by every process of one host (the embedded default).

WAL journal, synchronous=FULL (a commit survives power loss once it returns), and
BEGIN IMMEDIATE for every write: the C5 re-check and the charge of all attributes run
under the database write lock, so concurrent processes serialise and never both pass the
cap. Every driver error becomes one `LedgerStoreError` line naming the file and the class
(not a database, corrupted, foreign schema, read-only, disk full, busy); the transaction
is rolled back first, so nothing is half-written and no committed charge is lost.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

from dpmem_ref.core.files import is_regular_or_missing
from dpmem_ref.core.validate import check_seconds
from dpmem_ref.ledger.anchor import anchor_on_open, anchor_path, read_anchor, write_anchor
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment
from dpmem_ref.ledger.checkpoint import Checkpoint, LiveVerification, Served
from dpmem_ref.ledger.codecs import fraction_from_text, fraction_to_text
from dpmem_ref.ledger.contract import FaultHook, LedgerStoreError
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.scopes import check_meta_key, grouped_ledgers
from dpmem_ref.ledger.session import LedgerBackend
from dpmem_ref.ledger.sqlite.schema import (
    COLUMNS,
    SCHEMA,
    append_event,
    chain_head,
    check_high_water,
    describe_sqlite_error,
    has_history,
    identity,
    ledger_rows,
    open_chain,
    read_tail,
    store_checkpoint,
    verify_on_open,
)
from dpmem_ref.ledger.sqlite.session import SQLiteLedgerSession

_T = TypeVar("_T")
_JITTER = random.SystemRandom()  # backoff jitter only; fresh after fork


class SQLiteLedgerStore(LedgerBackend[sqlite3.Connection, SQLiteLedgerSession]):
    """Ledgers in one SQLite file shared by every process of a deployment.

    `fault_hook` (tests only) is called with "charge:inside" after the charge is written
    and before COMMIT, and with "charge:committed" right after COMMIT. `key`: the chain's
    HMAC key (default: `key_from_environment()`); every write appends one chain event.
    """

    def __init__(
        self,
        path: str | Path,
        busy_timeout_s: float = 60.0,
        fault_hook: FaultHook | None = None,
        key: ChainKey | None = None,
    ) -> None:
        self._busy_timeout_s = float(check_seconds(busy_timeout_s, "busy_timeout_s", 3600))
        self.path = Path(path)
        self._fault_hook = fault_hook
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._checkpoint: Checkpoint | None = None  # verified on open, not yet stored
        self._live: LiveVerification | None = None  # what is verified, moved forward before serving
        self._pid = -1
        if self.path.is_dir():
            raise LedgerStoreError(f"ledger database {self.path}: a directory, not an SQLite file")
        if not is_regular_or_missing(self.path):  # a FIFO or a device would block or never be a ledger
            raise LedgerStoreError(f"ledger database {self.path}: not a regular file (a FIFO, device or socket)")
        self.key = key_from_environment() if key is None else key
        with self.transaction() as connection:
            open_chain(connection, str(self.path), self.key)
            self.identity = identity(connection)
            head = chain_head(connection)
        found = anchor_path(self.path, self.identity)
        assert found is not None  # a SQLite file always has an anchor path
        self.high_water_path = found
        mark = anchor_on_open(self.high_water_path, self.key, self.identity, str(self.path), head.seq)
        if mark is None:
            self.committed(head)  # a new database: anchored at its genesis
        else:
            with self.reading() as connection:
                check_high_water(connection, str(self.path), mark, f"anchor {self.high_water_path}")
        self.verify_on_open()

    def verify_on_open(self) -> None:
        """Verify the chain from the last verified checkpoint to the head (O(new events)) and
        compare every ledger and meta row and the newer release and turn rows with it, so an
        edited ledger is never served; refused with one line naming the first bad row."""
        try:
            with self.reading() as connection:
                verified, stored = verify_on_open(connection, self.key, self.identity)
        except LedgerStoreError as error:
            raise LedgerStoreError(
                f"ledger database {self.path}: refused, {error} (dpmem ledger verify {self.path} names the row; "
                "put the newest verified backup back with dpmem ledger restore)"
            ) from None
        self._checkpoint = None if stored else verified.checkpoint()
        self._live = LiveVerification(self.key, str(self.path), verified)

    def _verify_served(
        self, tx: sqlite3.Connection, scopes: Sequence[Served], meta: Mapping[str, str | None] | None = None
    ) -> None:
        """Before rows are served or a charge admitted, in the same snapshot: fold the events
        committed since into what the open verified and compare the scopes' rows (and meta
        rows read) with it."""
        if self._live is not None:
            self._live.check(lambda seq, release, turn: read_tail(tx, seq, release, turn), scopes, meta)

    def committed(self, mark: HighWater) -> None:
        """After a COMMIT: raise the anchor to the committed chain head (never lowered)."""
        write_anchor(self.high_water_path, self.key, self.identity, mark)

    def save_checkpoint(self) -> None:
        """Store what the open verified now (else the first commit stores it)."""
        if self._checkpoint is not None:
            with self.transaction() as connection:
                store_checkpoint(connection, self.key, self.identity, self._checkpoint)
            self._checkpoint = None

    def check_anchor(self, connection: sqlite3.Connection) -> None:
        """Inside a write transaction, before its chain event: the chain must still hold the
        anchor's event (seq and MAC), so a database truncated or rewound while this store
        runs refuses the commit, before its release, instead of re-growing past the mark."""
        mark = read_anchor(self.high_water_path, self.key, self.identity)
        if mark is None:  # open wrote one: it was deleted while this store ran
            raise LedgerStoreError(
                f"ledger database {self.path}: its anchor {self.high_water_path} disappeared while it was open; "
                f"nothing was committed; if this is the live database: dpmem ledger reanchor {self.path}"
            )
        check_high_water(connection, str(self.path), mark, f"anchor {self.high_water_path}")

    def __repr__(self) -> str:
        return f"SQLiteLedgerStore(path={str(self.path)!r})"

    def _failure(self, error: sqlite3.Error) -> LedgerStoreError:
        return LedgerStoreError(f"ledger database {self.path}: {describe_sqlite_error(error)}")

    def retrying(self, action: Callable[[], _T]) -> _T:
        """Run `action`, retrying SQLITE_BUSY with short jittered sleeps up to busy_timeout_s.

        SQLite's own busy handler sleeps in steps of up to 100 ms, which serialises
        contending processes badly; the connection therefore has busy_timeout 0 and the
        waiting happens here.
        """
        deadline = time.monotonic() + self._busy_timeout_s
        delay = 0.0005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as error:
                text = str(error).lower()
                if "locked" not in text and "busy" not in text:
                    raise
                if time.monotonic() >= deadline:
                    raise LedgerStoreError(
                        f"ledger database {self.path}: busy for longer than busy_timeout_s"
                    ) from None
            time.sleep(_JITTER.uniform(0, delay))
            delay = min(2 * delay, 0.01)

    def _check_schema(self, connection: sqlite3.Connection) -> None:
        """Refuse a database that is not a dpmem ledger before writing anything to it."""
        tables = {str(name) for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        tables.discard("sqlite_sequence")
        if tables and "meta" not in tables:
            raise LedgerStoreError(f"ledger database {self.path}: foreign schema (not a dpmem ledger)")
        for table in tables & set(COLUMNS):
            columns = tuple(str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})"))
            if columns != COLUMNS[table]:
                raise LedgerStoreError(f"ledger database {self.path}: foreign schema (table {table} has other columns)")

    def connect(self) -> sqlite3.Connection:
        """This process's connection (a connection must not cross fork(): reopen in a child)."""
        if self._connection is None or self._pid != os.getpid():
            connection: sqlite3.Connection | None = None
            try:
                connection = sqlite3.connect(str(self.path), timeout=0, isolation_level=None, check_same_thread=False)
                connection.execute("PRAGMA busy_timeout = 0")
                self.retrying(lambda: self._check_schema(connection))
                mode = self.retrying(lambda: connection.execute("PRAGMA journal_mode = WAL").fetchone())
                if mode is None or str(mode[0]).lower() != "wal":
                    raise LedgerStoreError(f"ledger database {self.path}: could not enable the WAL journal")
                connection.execute("PRAGMA synchronous = FULL")
                self.retrying(lambda: connection.executescript(SCHEMA))
            except (sqlite3.Error, LedgerStoreError) as error:
                if connection is not None:
                    connection.close()
                if isinstance(error, LedgerStoreError):
                    raise
                raise self._failure(error) from None
            self._connection = connection
            self._pid = os.getpid()
        return self._connection

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; driver errors become one line."""
        with self._lock:
            connection = self.connect()
            try:
                self.retrying(lambda: connection.execute("BEGIN IMMEDIATE"))
                try:
                    yield connection
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        _rollback(connection)
                    raise
            except sqlite3.Error as error:
                raise self._failure(error) from None

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot (one read transaction)."""
        with self._lock:
            connection = self.connect()
            try:
                connection.execute("BEGIN")
                try:
                    yield connection
                finally:
                    if connection.in_transaction:
                        connection.execute("COMMIT")
            except sqlite3.Error as error:
                raise self._failure(error) from None

    @property
    def fingerprint(self) -> str | None:
        with self.reading() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        return None if row is None else str(row[0])

    # ------------------------------------------------ the session template's primitives

    @property
    def _where(self) -> str:
        return str(self.path)

    def _transaction(
        self, work: Callable[[sqlite3.Connection], _T], resolve: Callable[[sqlite3.Connection], _T | None] | None = None
    ) -> _T:
        with self.transaction() as connection:  # BEGIN IMMEDIATE: holds the write lock
            return work(connection)

    def _read_fingerprint(self, tx: sqlite3.Connection) -> str | None:
        row = tx.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        return None if row is None else str(row[0])

    def _has_history(self, tx: sqlite3.Connection) -> bool:
        return has_history(tx)

    def _write_fingerprint(self, tx: sqlite3.Connection, fingerprint: str) -> None:
        tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('fingerprint', ?)", (fingerprint,))

    def _open_rows(
        self, tx: sqlite3.Connection, key: SessionKey, caps: dict[str, Fraction]
    ) -> tuple[dict[str, Fraction] | None, bool]:
        rows = tx.execute(
            "SELECT attribute, cap FROM ledgers WHERE user = ? AND interaction = ?", (key.user, key.interaction)
        ).fetchall()
        if rows:
            return {a: fraction_from_text(c, "ledgers.cap") for a, c in rows}, False
        tx.executemany(
            "INSERT INTO ledgers (user, interaction, attribute, spent, cap) VALUES (?, ?, ?, '0/1', ?)",
            [(key.user, key.interaction, a, fraction_to_text(c)) for a, c in sorted(caps.items())],
        )
        return None, True

    def _session_keys(self, tx: sqlite3.Connection) -> list[SessionKey]:
        found = tx.execute("SELECT DISTINCT user, interaction FROM ledgers ORDER BY user, interaction").fetchall()
        return [SessionKey(user=str(user), interaction=str(interaction)) for user, interaction in found]

    def _session_ledgers(self, tx: sqlite3.Connection, key: SessionKey) -> dict[str, Fraction]:
        return ledger_rows(tx, key)[0]  # BEGIN IMMEDIATE already holds the write lock

    def _write_caps(
        self, tx: sqlite3.Connection, key: SessionKey, spent: dict[str, Fraction], caps: dict[str, Fraction]
    ) -> None:
        tx.executemany(
            "INSERT OR REPLACE INTO ledgers (user, interaction, attribute, spent, cap) VALUES (?, ?, ?, ?, ?)",
            [
                (key.user, key.interaction, a, fraction_to_text(spent[a]), fraction_to_text(caps[a]))
                for a in sorted(caps)
            ],
        )

    def _write_meta(self, tx: sqlite3.Connection, rows: Mapping[str, str]) -> None:
        tx.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", sorted(rows.items()))

    def _append_chain(self, tx: sqlite3.Connection, kind: str, body: str) -> HighWater:
        self.check_anchor(tx)
        if self._checkpoint is not None:  # what the open verified, stored with the first write
            store_checkpoint(tx, self.key, self.identity, self._checkpoint)
        return append_event(tx, self.key, kind, body)

    def _committed(self, mark: HighWater | None) -> None:
        if mark is not None:
            self._checkpoint = None  # stored by the transaction that just committed its event
            self.committed(mark)

    def _session(self, key: SessionKey) -> SQLiteLedgerSession:
        return SQLiteLedgerSession(backend=self, key=key)

    # ------------------------------------------------ the rest of the store

    def read_meta(self, key: str) -> str | None:
        check_meta_key(key)
        with self.reading() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            value = None if row is None else str(row[0])
            self._verify_served(connection, [], {key: value})
        return value

    def user_ledgers(self, user: str) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
        with self.reading() as connection:
            rows = connection.execute(
                "SELECT interaction, attribute, spent, cap FROM ledgers WHERE user = ? ORDER BY interaction", (user,)
            ).fetchall()
            grouped = grouped_ledgers(rows)
            self._verify_served(connection, [(SessionKey(user, i), spent, caps, None) for i, spent, caps in grouped])
        return grouped

    def integrity_check(self) -> str:
        with self.reading() as connection:
            row = connection.execute("PRAGMA integrity_check").fetchone()
        return str(row[0]) if row else "no answer"

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None


def _rollback(connection: sqlite3.Connection) -> None:
    try:
        connection.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # SQLite already rolled back (e.g. SQLITE_FULL); the transaction wrote nothing
