"""PostgresLedgerStore against a real server: races, faults, restarts, misuse.

- races: P processes x N charged selections on a tight cap (B = 2, eps = 2/3): exactly
  floor(B / eps) = 3 admitted, 0 overruns at any prefix of the commit order, in every
  repetition (default 8 x 25, twice; `-m slow`: the acceptance figure, 16 x 100, 5 repetitions);
- faults: a client SIGKILLed at every kill point of the charge path (and at the 2nd hit
  of each): every released view has its committed row and charge, L <= B, the
  interaction continues; a server restart in the middle of a run: the client reconnects,
  an ambiguous COMMIT is resolved, the run completes with every release charged;
- bad input: wrong password, unknown role, missing database, foreign schema, another
  interface's fingerprint: `dpmem run --store-url` says one line, exits 2, releases nothing;
  in process, the store's own line (a refused login, a connection the server ended) is pinned whole.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from test_crash_safety import (
    FIGURE2,
    POINTS,
    QUERIES,
    check_every_release_charged,
    kill_at,
    read_released,
    release_reporter,
)
from test_ledger_concurrency import CAP, ONE_SLOT
from test_ledger_contract import req

import tests.postgres_server as postgres_server
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.ledger import LedgerStoreError, interface_fingerprint, open_ledger_store
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from dpmem_ref.ledger.postgres.schema import describe_postgres_error
from dpmem_ref.ledger.postgres.verify import verify_postgres
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _keyed_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain on, keyed: forked workers inherit the key."""
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "crash-and-race-key-0123456789abcdef")
    monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)


def _racer(url: str, seed: int, selections: int, barrier: Any, results: Any) -> None:
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = open_ledger_store(url)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(seed)
    )
    barrier.wait()
    admitted = sum(sum(session.run_turn("dinner").record.admitted) for _ in range(selections))
    results.put(admitted)
    ledger_store.close()


def race(processes: int, selections: int) -> int:
    url = postgres_server.new_database()
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=_racer, args=(url, i, selections, barrier, results)) for i in range(processes)]
    for worker in workers:
        worker.start()
    admitted = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = open_ledger_store(url)
    snapshot = ledger_store.open_session("user", "race", loaded.interface.caps).load()
    ledger_store.close()
    assert len(snapshot.releases) == len(snapshot.history) == processes * selections
    running = Fraction(0)
    for release in snapshot.releases:  # 0 overruns at any prefix of the commit order
        running += release.epsilon
        assert running <= CAP
    assert running == snapshot.ledger_map()["diabetes"] == CAP
    assert sum(r.admitted for r in snapshot.releases) == sum(admitted)
    report = verify_postgres(url)  # the keyed chain of every replica's commits verifies
    assert report.ok and report.chain is not None and report.chain.releases == len(snapshot.releases), report.line()
    return sum(admitted)


def test_race_admits_exactly_floor_b_over_eps() -> None:
    postgres_server.server()
    assert [race(8, 25) for _ in range(2)] == [3, 3]


@pytest.mark.slow
def test_race_16_processes_x_100_selections() -> None:
    postgres_server.server()
    started = time.perf_counter()
    totals = [race(16, 100) for _ in range(5)]
    print(f"\npostgres race: 16 x 100, admitted per repetition {totals} in {time.perf_counter() - started:.1f} s")
    assert totals == [3] * 5


# ----------------------------------------------------------------------------- faults


def _victim(url: str, interaction: str, point: str, nth: int, fd: int) -> None:
    loaded = load_interface_file(FIGURE2)
    maybe_die, report = kill_at(point, nth), release_reporter(fd)
    ledger_store = PostgresLedgerStore(url, fault_hook=maybe_die)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", interaction, loaded.store("M"), SeededRandomSource(nth),
        checkpoint=maybe_die, on_release=report,
    )  # fmt: skip
    for query in QUERIES:
        session.run_turn(query)
    os._exit(0)


def verify(url: str, interaction: str, released: list[list[str]]) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = PostgresLedgerStore(url)
    snapshot = ledger_store.open_session("user", interaction, loaded.interface.caps).load()
    ledger_store.close()
    check_every_release_charged(snapshot, loaded.interface.caps, released)
    report = verify_postgres(url)  # the chain verifies after every kill
    assert report.ok, report.line()


@pytest.mark.parametrize("nth", [1, 2])
def test_sigkill_at_every_kill_point_loses_no_charge(nth: int) -> None:
    url = postgres_server.new_database()
    context = multiprocessing.get_context("fork")
    killed = []
    for point in POINTS:
        interaction = f"{point}-{nth}"
        read_fd, write_fd = os.pipe()
        worker = context.Process(target=_victim, args=(url, interaction, point, nth, write_fd))
        worker.start()
        os.close(write_fd)
        worker.join(timeout=120)
        assert worker.exitcode in (0, -signal.SIGKILL)
        killed.append(worker.exitcode == -signal.SIGKILL)
        verify(url, interaction, read_released(read_fd))
        # Restart path: a new process continues the crashed interaction to its end.
        loaded = load_interface_file(FIGURE2)
        ledger_store = PostgresLedgerStore(url)
        session = DurableSession.open(
            loaded.interface, ledger_store, "user", interaction, loaded.store("M"), SeededRandomSource(9)
        )
        session.run_turn("affordable-dinner")
        ledger_store.close()
        verify(url, interaction, [])
    assert all(killed)  # every point was reached and killed


def _runner(url: str, turns: int, fd: int) -> None:
    loaded = load_interface_file(FIGURE2)
    report = release_reporter(fd)
    ledger_store = PostgresLedgerStore(url, reconnect_timeout_s=60)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "restart", loaded.store("M"), SeededRandomSource(4), on_release=report
    )
    for turn in range(turns):
        session.run_turn(QUERIES[turn % len(QUERIES)])
        time.sleep(0.01)
    os._exit(0)


def test_server_restart_mid_run_continues_with_every_release_charged() -> None:
    url = postgres_server.new_database()
    context = multiprocessing.get_context("fork")
    read_fd, write_fd = os.pipe()
    worker = context.Process(target=_runner, args=(url, 120, write_fd))
    worker.start()
    os.close(write_fd)
    time.sleep(0.5)
    assert worker.is_alive()
    postgres_server.restart()
    assert worker.is_alive()  # the restart happened in the middle of the run
    worker.join(timeout=240)
    assert worker.exitcode == 0  # the run continued across the restart
    released = read_released(read_fd)
    assert len(released) >= 120
    verify(url, "restart", released)


def test_a_connection_lost_inside_the_charge_is_retried_exactly_once() -> None:
    url = postgres_server.new_database()
    terminated: list[int] = []

    def cut(point: str) -> None:  # the server kills this client's backend before COMMIT
        if point == "charge:inside" and not terminated:
            terminated.append(ledger_store.connect().info.backend_pid)
            postgres_server.admin_execute(url, f"SELECT pg_terminate_backend({terminated[0]})")

    ledger_store = PostgresLedgerStore(url, fault_hook=cut)
    loaded = interface_from_dict(ONE_SLOT)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "cut", loaded.store("M"), SeededRandomSource(1)
    )
    turn = session.run_turn("dinner")
    assert terminated and ledger_store.connect().info.backend_pid != terminated[0]  # it did reconnect
    snapshot = session.ledgers.load()
    assert len(snapshot.releases) == 1 and snapshot.releases[0].release_id == turn.releases[0].release_id
    assert snapshot.ledger_map()["diabetes"] == (Fraction(CAP, 3) if turn.record.admitted[0] else 0)
    ledger_store.close()


def test_a_lost_commit_answer_of_a_charge_to_several_scopes_resolves_to_every_scope_as_committed() -> None:
    """The COMMIT of a charge debiting three scopes reaches the server, then the connection breaks
    before the answer: the retry finds the committed row, and the outcome carries each other
    scope's ledgers as committed, in `also` order (what the runtime releases against)."""
    url = postgres_server.new_database()
    cut: list[int] = []

    def commit_then_cut(point: str) -> None:
        if point == "charge:inside" and not cut:
            connection = ledger_store.connect()
            connection.execute("COMMIT")  # the charge is now committed; its answer is never heard
            cut.append(connection.info.backend_pid)
            postgres_server.admin_execute(url, f"SELECT pg_terminate_backend({cut[0]})")

    ledger_store = PostgresLedgerStore(url, fault_hook=commit_then_cut)
    app = ledger_store.open_session("u", "e0:app:a", {"diabetes": Fraction(2), "debt": Fraction(2)})
    user = ledger_store.open_session("u", "e0:user", {"diabetes": Fraction(1)})
    period = ledger_store.open_session("u", "e0:period:7", {"diabetes": Fraction(3), "debt": Fraction(1)})
    outcome = app.charge_and_record(req(eps=Fraction(1, 3), release_id="e" * 16), also=(period.key, user.key))
    assert cut and ledger_store.connect().info.backend_pid != cut[0]  # resolved on a new connection
    assert outcome.admitted and outcome.release.release_id == "e" * 16
    assert outcome.ledger_map() == {"diabetes": Fraction(1, 3), "debt": Fraction(0)}
    assert [dict(scope) for scope in outcome.scopes] == [
        {"diabetes": Fraction(1, 3), "debt": Fraction(0)},  # the period scope, first in `also`
        {"diabetes": Fraction(1, 3)},  # the user scope
    ]
    assert [s.load().ledger_map() for s in (app, period, user)] == [dict(outcome.ledgers), *map(dict, outcome.scopes)]
    assert len(app.load().releases) == 1  # committed once, not run again
    ledger_store.close()


class CutRelay(postgres_server.RelayListener):
    """A Unix-socket relay in front of the test server that cuts ONE connection at the first
    statement holding `marker`: `after_commit=False` drops it before that statement reaches the
    server (its transaction never commits); True relays it and the COMMIT that follows, waits for
    the server's answer to the COMMIT and drops the connection instead of relaying it (the
    commit happened, the client never hears of it). Every other byte is relayed as it is."""

    def __init__(self, database_url: str, marker: bytes, after_commit: bool) -> None:
        super().__init__(database_url, "dpmem-relay-")
        self.marker, self.after_commit = marker, after_commit
        self.armed, self.connections = True, 0
        self.start()

    def relay(self, client: socket.socket) -> None:
        self.connections += 1
        upstream = self.to_server()
        state = {"seen": False, "commit_sent": False}
        threading.Thread(target=self._to_server, args=(client, upstream, state), daemon=True).start()
        threading.Thread(target=self._to_client, args=(client, upstream, state), daemon=True).start()

    @staticmethod
    def _drop(*sockets: socket.socket) -> None:
        for each in sockets:
            try:
                each.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            each.close()

    def _to_server(self, client: socket.socket, upstream: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := client.recv(65536):
                if self.armed and self.marker in data:
                    if not self.after_commit:
                        self.armed = False
                        self._drop(client, upstream)
                        return
                    state["seen"] = True
                elif self.armed and state["seen"] and b"COMMIT" in data:
                    self.armed = False
                    state["commit_sent"] = True  # before it is sent: its answer is never relayed
                upstream.sendall(data)
        except OSError:
            pass

    def _to_client(self, client: socket.socket, upstream: socket.socket, state: dict[str, bool]) -> None:
        try:
            while data := upstream.recv(65536):
                if state["commit_sent"]:  # the server answered the COMMIT: it committed
                    self._drop(client, upstream)
                    return
                client.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.mark.parametrize(
    "after_commit", [False, True], ids=["postgres-lost-before-the-turn", "postgres-lost-commit-answer"]
)
def test_postgres_a_turn_cut_off_from_the_server_is_recorded_exactly_once(after_commit: bool) -> None:
    """The connection drops at the turn's INSERT (the turn never committed: it is recorded on the
    new connection) or right after its COMMIT (it committed: found by its turn id, not inserted
    twice, not refused as a used id): either way the turn is in the history once."""
    url = postgres_server.new_database()
    relay = CutRelay(url, b"INSERT INTO dpmem_turns", after_commit)
    try:
        ledger_store = PostgresLedgerStore(relay.url)
        loaded = interface_from_dict(ONE_SLOT)
        session = DurableSession.open(
            loaded.interface, ledger_store, "user", "cut", loaded.store("M"), SeededRandomSource(1)
        )
        turn = session.run_turn("dinner")
        assert not relay.armed and relay.connections == 2  # cut once, reconnected once
        assert session.ledgers.load().history == (turn.record,)
        ledger_store.close()
    finally:
        relay.close()
    with psycopg.connect(url) as connection:
        turns = connection.execute("SELECT user_name, interaction, turn_id FROM dpmem_turns").fetchall()
    assert turns == [("user", "cut", turn.releases[0].turn_id)]
    assert verify_postgres(url).ok


def _wait_until_blocked(watcher: psycopg.Connection[Any], pid: int) -> None:
    """Until backend `pid` waits for a lock another transaction holds (or has queued for)."""
    deadline = time.monotonic() + 20
    while watcher.execute("SELECT pg_blocking_pids(%s) = '{}'", (pid,)).fetchone() != (False,):
        assert time.monotonic() < deadline, f"backend {pid} never waited for a lock"
        time.sleep(0.005)


@pytest.mark.parametrize("read", ["read_meta", "user_ledgers"])
def test_a_read_is_one_snapshot_that_a_write_committed_while_it_runs_does_not_enter(
    read: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`read_meta` and `user_ledgers` read their rows and the chain tail they verify them against in
    one REPEATABLE READ snapshot: a rebind (new meta row, new caps, its chain event) that commits
    after the rows were read and before the tail is read is in neither, so the rows are served as
    they were, not refused as differing from the chain; the next read serves the rebind.

    The schedule is forced with locks: a row lock on `dpmem_anchor` holds the rebind after its
    chain event and before its COMMIT; a LOCK TABLE queued behind it makes the read's tail wait
    until the rebind has committed."""
    monkeypatch.delenv("DPMEM_LEDGER_ANCHOR_DIR", raising=False)  # the anchor is the database's row
    url = postgres_server.new_database()
    old_caps, new_caps = {"diabetes": Fraction(1)}, {"diabetes": Fraction(2)}
    writer = PostgresLedgerStore(url)
    writer.open_session("u", "i", old_caps, fingerprint="a" * 64)
    writer.rebind("a" * 64, "b" * 64, {"runtime.epoch": "1"})
    reader = PostgresLedgerStore(url)
    reads = {
        "read_meta": lambda: reader.read_meta("runtime.epoch"),
        "user_ledgers": lambda: reader.user_ledgers("u"),
    }
    before = {"read_meta": "1", "user_ledgers": [("i", {"diabetes": Fraction(0)}, old_caps)]}
    after = {"read_meta": "2", "user_ledgers": [("i", {"diabetes": Fraction(0)}, new_caps)]}
    found: dict[str, object] = {}

    def reading() -> None:
        try:
            found["served"] = reads[read]()
        except LedgerStoreError as error:
            found["refused"] = str(error)

    def queue_behind_the_rebind() -> None:  # waits for the rebind's COMMIT; the read's tail waits behind it
        queued.execute("LOCK TABLE dpmem_chain IN ACCESS EXCLUSIVE MODE")
        queued.rollback()

    with (
        psycopg.connect(url, autocommit=True) as watcher,
        psycopg.connect(url) as anchor_holder,
        psycopg.connect(url) as queued,
    ):
        anchor_holder.execute("SELECT body FROM dpmem_anchor WHERE id = 1 FOR UPDATE")
        threads = [
            threading.Thread(
                target=writer.rebind, args=("b" * 64, "c" * 64, {"runtime.epoch": "2"}, lambda _: new_caps)
            ),
            threading.Thread(target=queue_behind_the_rebind),
            threading.Thread(target=reading),
        ]
        pids = [writer.connect().info.backend_pid, queued.info.backend_pid, reader.connect().info.backend_pid]
        for thread, pid in zip(threads, pids, strict=True):
            thread.start()
            _wait_until_blocked(watcher, pid)  # the rebind at its anchor row; the lock; the read at its tail
        anchor_holder.rollback()  # the rebind commits, then the queued lock is taken and let go, then the tail is read
        for thread in threads:
            thread.join(timeout=20)
            assert not thread.is_alive()
    assert found == {"served": before[read]}
    assert reads[read]() == after[read]
    writer.close()
    reader.close()


# ----------------------------------------------------------------------------- bad input


def dpmem_run(url: str, store: str = "M") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "run", str(FIGURE2), "--store", store,
         "--queries", str(ROOT / "examples" / "figure2-queries.txt"), "--seed", "0", "--store-url", url],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )  # fmt: skip


def _foreign_schema() -> str:
    url = postgres_server.new_database()
    postgres_server.admin_execute(url, "CREATE TABLE dpmem_ledgers (owner TEXT, spent REAL)")
    return url


def _other_interface() -> str:
    url = postgres_server.new_database()
    data = interface_from_dict(ONE_SLOT)
    ledger_store = PostgresLedgerStore(url)
    ledger_store.open_session("user", "default", data.interface.caps, fingerprint=interface_fingerprint(data.interface))
    ledger_store.close()
    return url


BAD = {
    "wrong password": (lambda: postgres_server.url(postgres_server.SHARED, password="wrong"), "authentication"),
    "unknown role": (lambda: postgres_server.url(postgres_server.SHARED, user="nobody"), "authentication"),
    "missing database": (lambda: postgres_server.url("no_such_database"), "does not exist"),
    "foreign schema": (_foreign_schema, "foreign schema"),
    "another interface": (_other_interface, "different interface"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_released(name: str) -> None:
    postgres_server.new_database()  # the server and the shared database exist
    make_url, words = BAD[name]
    url = make_url()
    run = dpmem_run(url)
    assert run.returncode == 2, run.stderr
    assert run.stdout == ""  # nothing released
    assert run.stderr.count("\n") == 1 and words in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert postgres_server.PASSWORD not in run.stderr  # the password never appears


def _server_error(database_url: str, statement: str) -> psycopg.Error:
    with psycopg.connect(database_url, autocommit=True) as connection:
        try:
            connection.execute(statement)
        except psycopg.Error as error:
            return error
    raise AssertionError(f"{statement!r} did not fail")


def _connect_error(database_url: str) -> psycopg.Error:
    try:
        psycopg.connect(database_url, connect_timeout=10).close()
    except psycopg.Error as error:
        return error
    raise AssertionError("the connection did not fail")


def test_postgres_errors_are_described_by_their_sqlstate_else_by_their_text() -> None:
    """A known SQLSTATE names the class, whatever the text says; an unknown one, or none (every
    connection failure: libpq's text carries no SQLSTATE), falls back to the text, in any case:
    "role" only with "does not exist" (a "role" without it, say in a host name, leaves the later
    needles to match), "database" only with "does not exist"; else the error's type (and SQLSTATE)."""
    url = postgres_server.new_database()
    admin = postgres_server.server().get_uri()
    shared, socket_dir = postgres_server.SHARED, postgres_server.socket_dir()
    nothing_listens = tempfile.mkdtemp(prefix="dpmem-none-")
    found = {
        # a known SQLSTATE: its class (the text alone would say nothing)
        "42P01 relation does not exist": _server_error(url, "SELECT 1 FROM dpmem_nothing"),
        "42501 permission denied to set role": _server_error(url, "SET ROLE postgres"),
        # an unknown SQLSTATE: the text
        "22023 role does not exist": _server_error(url, "SET ROLE nobody"),
        "42710 role already exists": _server_error(admin, f"CREATE ROLE {postgres_server.ROLE}"),
        "42P04 database already exists": _server_error(url, f"CREATE DATABASE {shared}"),
        # no SQLSTATE (the connection failed): the text
        "wrong password": _connect_error(postgres_server.url(shared, password="wrong")),
        "unknown role": _connect_error(postgres_server.url(shared, user="nobody")),
        "unknown database": _connect_error(postgres_server.url("no_such_database")),
        "no password": _connect_error(f"postgresql://{postgres_server.ROLE}@/{shared}?host={quote(socket_dir)}"),
        "no server": _connect_error(f"postgresql://u:p@/db?host={quote(nothing_listens)}"),
        "upper case": psycopg.OperationalError("CONNECTION REFUSED by 10.0.0.7"),
        "mixed case": psycopg.OperationalError('Could not translate host name "db.invalid" to address'),
        "timeout": psycopg.errors.ConnectionTimeout("connection timeout expired"),
        "role, no does not exist": psycopg.OperationalError('FATAL:  role "reader" is not permitted to log in'),
        "role, no does not exist, then a later needle": psycopg.OperationalError(
            'connection to server at "roles.example.com" (10.0.0.7), port 5432 failed: timeout expired'
        ),
        "nothing known": psycopg.InterfaceError("the connection is closed"),
        "not a psycopg error": ConnectionRefusedError(111, "Connection refused"),  # no sqlstate at all
    }
    shutil.rmtree(nothing_listens)
    assert {name: describe_postgres_error(error) for name, error in found.items()} == {
        "42P01 relation does not exist": "foreign schema (a dpmem table is missing)",
        "42501 permission denied to set role": "permission denied",
        "22023 role does not exist": "authentication failed (unknown role or not allowed)",
        "42710 role already exists": "PostgreSQL error (DuplicateObject 42710)",
        "42P04 database already exists": "PostgreSQL error (DuplicateDatabase 42P04)",
        "wrong password": "authentication failed (wrong user or password)",
        "unknown role": "authentication failed (wrong user or password)",  # scram does not tell which
        "unknown database": "the database does not exist",
        "no password": "authentication failed (no password given)",
        "no server": "cannot reach the server",
        "upper case": "cannot reach the server",
        "mixed case": "cannot reach the server (unknown host)",
        "timeout": "cannot reach the server (timeout)",
        "role, no does not exist": "PostgreSQL error (OperationalError)",
        "role, no does not exist, then a later needle": "cannot reach the server (timeout)",
        "nothing known": "PostgreSQL error (InterfaceError)",
        "not a psycopg error": "cannot reach the server",
    }


def test_a_store_the_server_refuses_is_one_line_naming_the_database() -> None:
    """In process: the store's refusal is the redacted URL and the driver's error in words,
    for a login refused at open and for a connection the server ended that is not regained
    within `reconnect_timeout_s`."""
    url = postgres_server.new_database()
    wrong = postgres_server.url(postgres_server.SHARED, password="wrong")
    with pytest.raises(LedgerStoreError) as refused:
        PostgresLedgerStore(wrong)
    shown = wrong.replace(":wrong@", ":***@")
    assert str(refused.value) == f"ledger database {shown}: authentication failed (wrong user or password)"
    ledger_store = PostgresLedgerStore(url, reconnect_timeout_s=0)
    backend = ledger_store.connect().info.backend_pid
    postgres_server.admin_execute(url, f"SELECT pg_terminate_backend({backend})")  # 57P01, admin shutdown
    with pytest.raises(LedgerStoreError) as ended:
        ledger_store.read_meta("runtime.any")
    assert str(ended.value) == f"ledger database {postgres_server.shown(url)}: the server is shutting down"
    ledger_store.close()
