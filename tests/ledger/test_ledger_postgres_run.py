"""`PostgresLedgerStore.run`, the one place a PostgreSQL transaction is retried or resumed, and
`connect`, the one place a connection is made: each rule in isolation, on the real test server.

- a serialization failure or a deadlock is retried `retries` times, then refused in one line;
- `read_only` is one REPEATABLE READ READ ONLY snapshot, and the open's verification uses it;
- an OperationalError on a live connection (a query error) is refused at once, never retried;
- a first connection that fails is refused at once (a bad URL is not a lost server);
- a connection lost after it was made is reconnected, also when the first reconnect fails, and
  `resolve` is asked whether the lost transaction committed before `work` runs again;
- a forked child makes its own connection and never closes its parent's.

The race, restart and kill-point tests in test_ledger_postgres.py exercise the same code under
load; these pin each rule so that a change to one of them fails by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg_errors

import tests.postgres_server as postgres_server
from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.chain import ChainKey
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from dpmem_ref.ledger.postgres import store as store_module
from tests.ledger_fixtures import FakeClock, TopOfRange, in_child

KEY = ChainKey(secret=b"postgres-run-key-0123456789abcdef", keyed=True)
RETRIES = 3
UNREACHABLE = "postgresql://tests:pw@/ledgers?host=/nonexistent-dpmem-socket-dir"


@pytest.fixture
def database_url() -> str:
    return postgres_server.new_database()


@pytest.fixture
def ledger_store(database_url: str) -> Iterator[PostgresLedgerStore]:
    opened = PostgresLedgerStore(database_url, retries=RETRIES, reconnect_timeout_s=30, key=KEY)
    yield opened
    opened.close()


def backend_pid(tx: psycopg.Connection[Any]) -> int:
    row = tx.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


class Failing:
    """A transaction's work that raises `error` on its first `failures` calls, then returns how
    many calls it took."""

    def __init__(self, error: Callable[[], Exception], failures: int) -> None:
        self.error = error
        self.failures = failures
        self.calls = 0

    def __call__(self, tx: psycopg.Connection[Any]) -> int:
        self.calls += 1
        backend_pid(tx)  # a real statement in the transaction the failure rolls back
        if self.calls <= self.failures:
            raise self.error()
        return self.calls


CONFLICTS = {
    "serialization failure": lambda: pg_errors.SerializationFailure("could not serialize access"),
    "deadlock": lambda: pg_errors.DeadlockDetected("deadlock detected"),
}


@pytest.mark.parametrize("conflict", CONFLICTS.values(), ids=list(CONFLICTS))
def test_a_conflict_is_retried_up_to_retries_times(
    ledger_store: PostgresLedgerStore, conflict: Callable[[], Exception]
) -> None:
    work = Failing(conflict, failures=RETRIES)
    assert ledger_store.run(work) == RETRIES + 1


@pytest.mark.parametrize("conflict", CONFLICTS.values(), ids=list(CONFLICTS))
def test_one_conflict_more_than_retries_is_refused_in_one_line(
    ledger_store: PostgresLedgerStore, database_url: str, conflict: Callable[[], Exception]
) -> None:
    work = Failing(conflict, failures=RETRIES + 1)
    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.run(work)
    assert str(refused.value) == (
        f"ledger database {postgres_server.shown(database_url)}: still conflicting after {RETRIES} retries"
    )
    assert work.calls == RETRIES + 1


def snapshot(tx: psycopg.Connection[Any]) -> tuple[str, str]:
    isolation = tx.execute("SHOW transaction_isolation").fetchone()
    read_only = tx.execute("SHOW transaction_read_only").fetchone()
    assert isolation is not None and read_only is not None
    return str(isolation[0]), str(read_only[0])


def test_read_only_is_one_repeatable_read_snapshot(ledger_store: PostgresLedgerStore) -> None:
    assert ledger_store.run(snapshot, read_only=True) == ("repeatable read", "on")
    assert ledger_store.run(snapshot) == ("read committed", "off")


def test_the_open_verifies_in_one_read_only_snapshot(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    PostgresLedgerStore(database_url, key=KEY).close()  # the schema exists: the open below only reads
    seen: list[tuple[str, str]] = []
    verify_on_open = store_module.verify_on_open

    def spy(tx: psycopg.Connection[Any], *arguments: Any) -> Any:
        seen.append(snapshot(tx))
        return verify_on_open(tx, *arguments)

    monkeypatch.setattr(store_module, "verify_on_open", spy)
    PostgresLedgerStore(database_url, key=KEY).close()
    assert seen == [("repeatable read", "on")]


def test_a_query_error_on_a_live_connection_is_refused_at_once(
    ledger_store: PostgresLedgerStore, database_url: str
) -> None:
    calls: list[int] = []

    def cancelled(tx: psycopg.Connection[Any]) -> str:
        calls.append(backend_pid(tx))
        if len(calls) > 1:
            return "ran again"
        tx.execute("SET LOCAL statement_timeout = 1")
        tx.execute("SELECT pg_sleep(5)")  # 57014, an OperationalError on a healthy connection
        return "not cancelled"

    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.run(cancelled)
    assert str(refused.value) == (  # the server answered: not "cannot reach the server (timeout)"
        f"ledger database {postgres_server.shown(database_url)}: a statement was cancelled (statement_timeout or a cancel request)"
    )
    assert len(calls) == 1
    assert ledger_store.run(backend_pid) == calls[0]  # the same connection serves on


def test_any_other_driver_error_is_refused_at_once_in_words(
    ledger_store: PostgresLedgerStore, database_url: str
) -> None:
    calls: list[int] = []

    def misspelt(tx: psycopg.Connection[Any]) -> None:
        calls.append(backend_pid(tx))
        tx.execute("SELEKT 1")  # 42601, a ProgrammingError: neither a conflict nor a lost connection

    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.run(misspelt)
    assert str(refused.value) == (
        f"ledger database {postgres_server.shown(database_url)}: PostgreSQL error (SyntaxError 42601)"
    )
    assert len(calls) == 1


class CountingConnect:
    """psycopg.connect, counted; its first `refusals` calls fail as an unreachable server does."""

    def __init__(self, refusals: int = 0) -> None:
        self.real = psycopg.connect
        self.refusals = refusals
        self.calls = 0

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        self.calls += 1
        if self.calls <= self.refusals:
            raise psycopg.OperationalError("connection refused")
        return self.real(*arguments, **keywords)


def test_a_first_connection_that_fails_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad URL, host or credentials is not a lost server: no reconnecting for
    `reconnect_timeout_s`."""
    connect = CountingConnect()
    monkeypatch.setattr(psycopg, "connect", connect)
    with pytest.raises(LedgerStoreError) as refused:
        PostgresLedgerStore(UNREACHABLE, reconnect_timeout_s=30, key=KEY)
    assert str(refused.value) == (
        "ledger database postgresql://tests:***@/ledgers?host=/nonexistent-dpmem-socket-dir: cannot reach the server"
    )
    assert connect.calls == 1


def terminate_own_backend(tx: psycopg.Connection[Any]) -> None:
    tx.execute("SELECT pg_terminate_backend(pg_backend_pid())")  # 57P01: the connection is lost


class LostOnce:
    """Work whose first call loses the connection (as a server restart does mid-transaction)."""

    def __init__(self) -> None:
        self.backends: list[int] = []

    def __call__(self, tx: psycopg.Connection[Any]) -> str:
        self.backends.append(backend_pid(tx))
        if len(self.backends) == 1:
            terminate_own_backend(tx)
        return "work ran again"


class Resolver:
    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.backends: list[int] = []

    def __call__(self, tx: psycopg.Connection[Any]) -> str | None:
        self.backends.append(backend_pid(tx))
        return self.answer


@pytest.mark.parametrize("refusals", [0, 2], ids=["reconnected at once", "reconnected after two refusals"])
@pytest.mark.parametrize(
    ("answer", "expected", "work_calls"),
    [("the lost commit happened", "the lost commit happened", 1), (None, "work ran again", 2)],
    ids=["resolve says committed", "resolve says not committed"],
)
def test_a_lost_connection_is_reconnected_and_resolved(
    ledger_store: PostgresLedgerStore,
    monkeypatch: pytest.MonkeyPatch,
    refusals: int,
    answer: str | None,
    expected: str,
    work_calls: int,
) -> None:
    ledger_store.connect()
    connect = CountingConnect(refusals)
    monkeypatch.setattr(psycopg, "connect", connect)
    work, resolve = LostOnce(), Resolver(answer)
    assert ledger_store.run(work, resolve) == expected
    assert connect.calls == refusals + 1  # reconnected, after the refused tries
    assert len(work.backends) == work_calls
    assert len(resolve.backends) == 1  # asked once, on the new connection
    assert resolve.backends[0] != work.backends[0]
    assert work.backends[1:] == resolve.backends[: work_calls - 1]


def test_by_default_16_retries_with_jittered_backoff_growing_linearly(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    clock, jitter = FakeClock(), TopOfRange()
    monkeypatch.setattr(store_module, "time", clock)
    monkeypatch.setattr(store_module, "_JITTER", jitter)
    work = Failing(CONFLICTS["serialization failure"], failures=17)
    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.run(work)
    assert str(refused.value) == (
        f"ledger database {postgres_server.shown(database_url)}: still conflicting after 16 retries"
    )
    assert work.calls == 17 and len(clock.sleeps) == 16
    assert jitter.ranges == [(0, 0.002 * attempt) for attempt in range(1, 17)]  # up to 2 ms per attempt so far
    assert clock.sleeps == [high for _, high in jitter.ranges]
    ledger_store.close()


def test_by_default_a_lost_server_is_waited_for_30_seconds(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    ledger_store.connect()
    clock = FakeClock()
    monkeypatch.setattr(store_module, "time", clock)
    connect = CountingConnect(refusals=10**6)  # the server stays away
    monkeypatch.setattr(psycopg, "connect", connect)
    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.run(terminate_own_backend)
    assert str(refused.value) == f"ledger database {postgres_server.shown(database_url)}: cannot reach the server"
    # lost at 1000 s, so the deadline is 1030 s: one reconnect per (fake) second, the last at 1030 s
    assert clock.now == 1030.0 and connect.calls == 30
    assert set(clock.sleeps) == {0.05}  # polled every 50 ms (fake seconds here)


def test_a_lost_connection_without_resolve_runs_the_work_again(ledger_store: PostgresLedgerStore) -> None:
    work = LostOnce()
    assert ledger_store.run(work) == "work ran again"
    assert len(work.backends) == 2 and work.backends[0] != work.backends[1]


def test_a_closed_connection_is_replaced(ledger_store: PostgresLedgerStore) -> None:
    first = ledger_store.run(backend_pid)
    ledger_store.connect().close()
    assert ledger_store.run(backend_pid) != first


def test_a_forked_child_connects_on_its_own(ledger_store: PostgresLedgerStore) -> None:
    parent = ledger_store.run(backend_pid)
    child = in_child(lambda: ledger_store.run(backend_pid))
    assert child.isdigit() and int(child) != parent
    assert ledger_store.run(backend_pid) == parent  # the parent's connection untouched


def test_a_forked_child_closing_the_store_leaves_the_parents_connection(ledger_store: PostgresLedgerStore) -> None:
    parent = ledger_store.run(backend_pid)

    assert in_child(ledger_store.close) == "None"
    assert ledger_store.run(backend_pid) == parent
