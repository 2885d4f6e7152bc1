"""`verify_postgres`'s report, field by field (`dpmem ledger verify postgresql://...`).

A verified database (its fingerprint, counts, and the mark it checked: the anchor row, or the
one passed); the anchor missing, refused, or not asked for; a database without the chain
table (a genuine pre-chain ledger, named with its migration, or a dropped chain); a login the
server refuses. Every ledger here is chained under KEY, not under the environment's key.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

import psycopg
import pytest
from test_ledger_fingerprint import BASE

import tests.postgres_server as postgres_server
from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.ledger import LedgerStoreError, interface_fingerprint
from dpmem_ref.ledger.backup import LedgerReport
from dpmem_ref.ledger.chain import ChainKey, HighWater
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from dpmem_ref.ledger.postgres.verify import verify_postgres
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

KEY = ChainKey(secret=b"verify-report-key-0123456789abcdef", keyed=True)
MISSING = "anchor missing (a truncated tail would go unnoticed)"
PRE_CHAIN = (
    "a ledger written before the tamper-evident chain (schema 1): "
    "bind and chain it once with dpmem ledger migrate DB --interface FILE"
)
DROPPED = (
    "the chain table is missing (dropped: tampered); "
    "put the newest verified backup back with dpmem ledger restore BACKUP DB"
)


@pytest.fixture(autouse=True)
def _other_key_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment's key is not the ledgers' key: a verify that read it would fail."""
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "the-environments-key-0123456789abcdef")
    monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)
    monkeypatch.delenv("DPMEM_LEDGER_ANCHOR_DIR", raising=False)  # the anchor is the database's row
    yield


def _execute(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)


def _head(url: str) -> HighWater:
    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT seq, mac FROM dpmem_chain ORDER BY seq DESC LIMIT 1").fetchone()
    assert row is not None
    return HighWater(int(row[0]), str(row[1]))


def _ledger_with_one_turn() -> tuple[str, str]:
    """A ledger bound to BASE with one session and one turn (chain: genesis, bind, open,
    charge, turn): its URL and BASE's fingerprint."""
    url = postgres_server.new_database()
    loaded = interface_from_dict(BASE)
    ledger_store = PostgresLedgerStore(url, key=KEY)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "chat", loaded.store("M"), SeededRandomSource(0), turn_deadline_s=None
    )
    session.run_turn("dinner")
    ledger_store.close()
    return url, interface_fingerprint(loaded.interface)


def _ledger_of_events(events: int) -> str:
    """An unbound ledger of `events` chain events (1: genesis; 2: and one session opened)."""
    url = postgres_server.new_database()
    ledger_store = PostgresLedgerStore(url, key=KEY)
    if events == 2:
        ledger_store.open_session("user", "chat", {"diabetes": Fraction(2)})
    ledger_store.close()
    return url


def test_postgres_verify_reports_the_ledger_under_the_key_passed_and_the_anchor_it_reached() -> None:
    url, fingerprint = _ledger_with_one_turn()
    head = _head(url)
    report = verify_postgres(url, KEY)
    assert report == LedgerReport(postgres_server.shown(url), fingerprint, 1, 1, 1, None, report.chain, head)
    assert report.chain is not None and (report.chain.events, report.chain.problem) == (5, None)
    assert report.line() == (
        f"ledger {postgres_server.shown(url)}: ok (schema 2, fingerprint {fingerprint[:12]}, 1 sessions, 1 releases, 1 turns, "
        "L <= B on every ledger, charge log matches the ledgers, "
        f"chain of 5 events verified (key id {report.chain.key_id}), high-water mark seq 5 reached)"
    )
    under_the_environments_key = verify_postgres(url).problem
    assert under_the_environments_key is not None
    assert under_the_environments_key.startswith(f"chained with key id {report.chain.key_id}, but the configured key")


def test_postgres_verify_checks_a_mark_passed_in_place_of_the_anchor() -> None:
    url, fingerprint = _ledger_with_one_turn()
    head = _head(url)
    _execute(url, "DELETE FROM dpmem_anchor")
    passed = verify_postgres(url, KEY, mark=head)  # no anchor read, so none is missing
    assert passed == LedgerReport(postgres_server.shown(url), fingerprint, 1, 1, 1, None, passed.chain, head)
    beyond = HighWater(6, head.mac)
    truncated = verify_postgres(url, KEY, mark=beyond)
    assert (truncated.problem, truncated.high_water) == (
        "the chain (head seq 5) does not reach its high-water mark seq 6: "
        "rolled back or truncated without a recorded rollback",
        beyond,
    )


@pytest.mark.parametrize("events", [1, 2])
def test_postgres_verify_names_a_missing_anchor_once_the_chain_holds_more_than_its_genesis(events: int) -> None:
    """Without its anchor row, a chain beyond its genesis event could have lost a tail
    unnoticed; `high_water=False` asks for the chain alone."""
    url = _ledger_of_events(events)
    _execute(url, "DELETE FROM dpmem_anchor")
    report = verify_postgres(url, KEY)
    assert report.chain is not None and report.chain.events == events
    assert (report.problem, report.high_water) == ({1: None, 2: MISSING}[events], None)
    assert verify_postgres(url, KEY, high_water=False).problem is None


def test_postgres_verify_reports_an_anchor_row_it_refuses() -> None:
    url = _ledger_of_events(2)
    _execute(url, """UPDATE dpmem_anchor SET body = replace(body, '"seq": 2', '"seq": 1')""")
    report = verify_postgres(url, KEY)
    assert report.chain is not None and report.chain.problem is None
    assert (report.problem, report.high_water) == (
        f"anchor {postgres_server.shown(url)} dpmem_anchor: its seal does not match the key (edited, or sealed with another key)",
        None,
    )
    assert verify_postgres(url, KEY, high_water=False).problem is None


@pytest.mark.parametrize(
    ("tables", "schema", "problem"),
    [
        ("all three", "1", PRE_CHAIN),
        ("no turns table", "1", DROPPED),
        ("all three", "2", DROPPED),
    ],
)
def test_postgres_verify_names_a_ledger_without_its_chain_table(tables: str, schema: str, problem: str) -> None:
    """A pre-chain ledger (schema 1, its ledgers, releases and turns tables) is named with its
    migration; anything else without the chain table is a dropped chain."""
    url, _ = _ledger_with_one_turn()
    statements = ["DROP TABLE dpmem_chain", f"UPDATE dpmem_meta SET value = '{schema}' WHERE key = 'schema'"]
    if tables == "no turns table":
        statements.append("DROP TABLE dpmem_turns")
    _execute(url, *statements)
    report = verify_postgres(url, KEY)
    assert report == LedgerReport(postgres_server.shown(url), None, 0, 0, 0, problem=problem)
    assert report.line() == f"ledger {postgres_server.shown(url)}: FAILED: {problem}"


def test_postgres_verify_of_a_login_the_server_refuses_is_one_line_naming_the_database() -> None:
    wrong = postgres_server.url(postgres_server.SHARED, password="wrong")
    with pytest.raises(LedgerStoreError) as refused:
        verify_postgres(wrong, KEY)
    shown = wrong.replace(":wrong@", ":***@")
    assert str(refused.value) == f"ledger database {shown}: authentication failed (wrong user or password)"
