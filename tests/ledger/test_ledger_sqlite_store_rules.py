"""`SQLiteLedgerStore`'s own rules, each in isolation: `retrying` (SQLITE_BUSY is retried until
busy_timeout_s, any other error is not), `connect` (one connection per process, usable from any
thread), the schema check's exact refusals and busy_timeout_s's bounds.

The concurrency and crash tests exercise the same code under load; these pin each rule so that
a change to one of them fails by name.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import LedgerStoreError, SQLiteLedgerStore
from dpmem_ref.ledger.chain import ChainKey
from dpmem_ref.ledger.sqlite import store as store_module
from tests.ledger_fixtures import FakeClock, TopOfRange, charge_request, in_child

KEY = ChainKey(secret=b"sqlite-rules-key-0123456789abcdef", keyed=True)


class Busy:
    """An action that raises sqlite3.OperationalError(`text`) on its first `failures` calls,
    then returns how many calls it took."""

    def __init__(self, text: str, failures: int) -> None:
        self.text = text
        self.failures = failures
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise sqlite3.OperationalError(self.text)
        return self.calls


# SQLITE_BUSY and SQLITE_LOCKED as the driver words them, and the rule's two words alone
BUSY_TEXTS = ["database is locked", "database table is locked", "Database Is Busy", "busy"]


@pytest.mark.parametrize("text", BUSY_TEXTS)
def test_busy_is_retried_until_the_action_succeeds(tmp_path: Path, text: str) -> None:
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db", busy_timeout_s=60, key=KEY)
    action = Busy(text, failures=5)
    assert ledger_store.retrying(action) == 6


@pytest.mark.parametrize("text", ["no such table: ledgers", "disk I/O error", "database disk image is malformed"])
def test_any_other_operational_error_is_raised_at_once(tmp_path: Path, text: str) -> None:
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db", busy_timeout_s=60, key=KEY)
    action = Busy(text, failures=1)
    with pytest.raises(sqlite3.OperationalError, match=f"^{text}$"):
        ledger_store.retrying(action)
    assert action.calls == 1


def test_busy_past_busy_timeout_s_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path, busy_timeout_s=0.05, key=KEY)
    action = Busy("database is locked", failures=10**9)
    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.retrying(action)
    assert str(refused.value) == f"ledger database {path}: busy for longer than busy_timeout_s"
    assert action.calls > 2  # retried, with sleeps of at most 10 ms, before the deadline


def test_busy_backs_off_doubling_to_10_ms_until_busy_timeout_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path, busy_timeout_s=12, key=KEY)
    clock, jitter = FakeClock(), TopOfRange()
    monkeypatch.setattr(store_module, "time", clock)
    monkeypatch.setattr(store_module, "_JITTER", jitter)
    action = Busy("database is locked", failures=10**9)
    with pytest.raises(LedgerStoreError, match="busy for longer than busy_timeout_s$"):
        ledger_store.retrying(action)
    # busy at 1000 s, so the deadline is 1012 s: one try per (fake) second, the last at 1012 s
    assert clock.now == 1012.0 and action.calls == 13
    assert jitter.ranges == [(0, min(0.0005 * 2**attempt, 0.01)) for attempt in range(12)]
    assert clock.sleeps == [high for _, high in jitter.ranges]


def test_by_default_busy_is_retried_for_60_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db", key=KEY)
    clock = FakeClock()
    monkeypatch.setattr(store_module, "time", clock)
    monkeypatch.setattr(store_module, "_JITTER", TopOfRange())
    action = Busy("database is locked", failures=10**9)
    with pytest.raises(LedgerStoreError, match="busy for longer than busy_timeout_s$"):
        ledger_store.retrying(action)
    assert clock.now == 1060.0 and action.calls == 61


@pytest.mark.parametrize("timeout", [3600.5, 3601, 10**6])
def test_busy_timeout_s_above_an_hour_is_refused(tmp_path: Path, timeout: float) -> None:
    with pytest.raises(InputError) as refused:
        SQLiteLedgerStore(tmp_path / "l.db", busy_timeout_s=timeout, key=KEY)
    assert str(refused.value).startswith("busy_timeout_s: expected a number of seconds in (0, 3600]")
    assert not (tmp_path / "l.db").exists()


def test_busy_timeout_s_of_an_hour_is_accepted(tmp_path: Path) -> None:
    SQLiteLedgerStore(tmp_path / "l.db", busy_timeout_s=3600, key=KEY).close()


def test_the_connection_serves_other_threads(tmp_path: Path) -> None:
    """The server runs turns on worker threads: one connection, guarded by the store's lock."""
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db", key=KEY)
    ledger_store.open_session("u", "i", {"a": 1})
    found: list[object] = []
    worker = threading.Thread(target=lambda: found.append(ledger_store.open_session("u", "i", {"a": 1}).load()))
    worker.start()
    worker.join()
    assert len(found) == 1


def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    """An SQLite connection must not cross fork() (sqlite.org/howtocorrupt.html, 2.6)."""
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db", key=KEY)
    parents = ledger_store.connect()
    assert in_child(lambda: ledger_store.connect() is not parents) == "True"
    assert ledger_store.connect() is parents


def foreign_tables(path: Path) -> None:
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance REAL)")
    raw.close()


def other_columns(path: Path) -> None:
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        raw.execute("CREATE TABLE ledgers (user TEXT, attribute TEXT, spent REAL)")
    raw.close()


def a_directory(path: Path) -> None:
    path.mkdir()


REFUSED = {
    "foreign tables": (foreign_tables, "foreign schema (not a dpmem ledger)"),
    "our table, other columns": (other_columns, "foreign schema (table ledgers has other columns)"),
    "a directory": (a_directory, "a directory, not an SQLite file"),
}


@pytest.mark.parametrize(("make", "problem"), REFUSED.values(), ids=list(REFUSED))
def test_a_foreign_file_is_refused_naming_what_is_foreign(
    tmp_path: Path, make: Callable[[Path], None], problem: str
) -> None:
    path = tmp_path / "l.db"
    make(path)
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path, key=KEY)
    assert str(refused.value) == f"ledger database {path}: {problem}"


def test_a_database_whose_only_table_is_sqlite_sequence_is_empty(tmp_path: Path) -> None:
    """SQLite keeps sqlite_sequence after the last AUTOINCREMENT table is dropped: that file
    holds no table of anyone's, so it is an empty database, not a foreign schema."""
    path = tmp_path / "l.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE gone (id INTEGER PRIMARY KEY AUTOINCREMENT)")
        raw.execute("INSERT INTO gone DEFAULT VALUES")
        raw.execute("DROP TABLE gone")
    raw.close()
    with sqlite3.connect(path) as raw:
        left = [name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    raw.close()
    assert left == ["sqlite_sequence"]
    ledger_store = SQLiteLedgerStore(path, key=KEY)
    assert ledger_store.open_session("u", "i", {"a": 1}).load().ledger_map() == {"a": 0}


def charged(path: Path, charges: int) -> None:
    ledger_store = SQLiteLedgerStore(path, key=KEY)
    session = ledger_store.open_session("u", "i", {"diabetes": 1})
    for _ in range(charges):
        session.charge_and_record(charge_request(Fraction(1, 9)))
    ledger_store.close()  # the last connection: the WAL is checkpointed into the file


def test_a_copied_back_older_file_is_refused_on_open_naming_its_anchor(tmp_path: Path) -> None:
    path, older = tmp_path / "l.db", tmp_path / "older.db"
    charged(path, 1)
    shutil.copyfile(path, older)
    charged(path, 2)
    with sqlite3.connect(path) as raw:
        head = int(raw.execute("SELECT MAX(seq) FROM chain").fetchone()[0])
    raw.close()
    anchor = SQLiteLedgerStore(path, key=KEY).high_water_path
    shutil.copyfile(older, path)  # an older copy put back: the anchor file stays ahead of it
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path, key=KEY)
    assert str(refused.value) == (
        f"ledger database {path}: its chain does not reach its high-water mark (the event of anchor {anchor}, "
        f"seq {head}): rewound, truncated or forked; put the newest backup back with dpmem ledger restore BACKUP "
        f"{path} (--allow-rollback restores an older one, recorded)"
    )


def test_an_edited_ledger_is_refused_on_open_pointing_to_verify_and_restore(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    charged(path, 1)
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE ledgers SET spent = '0'")  # a charge undone behind dpmem's back
    raw.close()
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path, key=KEY)
    message = str(refused.value)
    assert message.startswith(f"ledger database {path}: refused, ")
    assert message.endswith(
        f" (dpmem ledger verify {path} names the row; put the newest verified backup back with dpmem ledger restore)"
    )
