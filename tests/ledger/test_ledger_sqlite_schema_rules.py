"""The SQLite schema's rules on open (`open_chain`) and the chain reads beside it, each in
isolation: planted triggers and views are refused by name; a schema-1 file (written before the
chain) is upgraded in place only while it holds no rows, and otherwise refused with the migration
line; an unknown version and a chain that lost its first event (with or without its later events)
are refused by name; `identity` answers for a written chain and refuses an empty one. The
PostgreSQL twin is test_ledger_postgres_schema_rules.py.
"""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger import LedgerStoreError, SQLiteLedgerStore
from dpmem_ref.ledger.chain import ChainKey, database_identity
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, SCHEMA_VERSION
from dpmem_ref.ledger.sqlite.schema import identity
from tests.ledger_fixtures import charge_request

KEY = ChainKey(secret=b"sqlite-schema-key-0123456789abcd", keyed=True)
CAPS = {"diabetes": Fraction(1000)}
ROW_TABLES = ("ledgers", "releases", "turns")


def execute(path: Path, *statements: str) -> list[tuple[Any, ...]]:
    raw = sqlite3.connect(path)
    try:
        found: list[tuple[Any, ...]] = []
        for statement in statements:
            found = raw.execute(statement).fetchall()
        raw.commit()
        return found
    finally:
        raw.close()


def schema_version(path: Path) -> str:
    return str(execute(path, "SELECT value FROM meta WHERE key = 'schema'")[0][0])


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A ledger file with one session, three charges and a turn, closed."""
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path, key=KEY)
    session = ledger_store.open_session("u", "i", CAPS)
    for _ in range(3):
        session.charge_and_record(charge_request())
    session.record_turn("a1", TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=()))
    ledger_store.close()
    return path


def refusal(path: Path) -> str:
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path, key=KEY)
    return str(refused.value)


PLANTED = {
    "a trigger": (
        ["CREATE TRIGGER undo AFTER INSERT ON releases BEGIN UPDATE ledgers SET spent = '0'; END"],
        "trigger undo",
    ),
    "a view": (["CREATE VIEW peek AS SELECT * FROM ledgers"], "view peek"),
    "both, named in order": (
        [
            "CREATE VIEW v2 AS SELECT 1",
            "CREATE TRIGGER t1 AFTER INSERT ON turns BEGIN SELECT 1; END",
            "CREATE VIEW v1 AS SELECT 2",
        ],
        "trigger t1, view v1, view v2",
    ),
}


@pytest.mark.parametrize(("statements", "named"), PLANTED.values(), ids=list(PLANTED))
def test_planted_triggers_and_views_are_refused_by_name(written: Path, statements: list[str], named: str) -> None:
    execute(written, *statements)
    assert refusal(written) == f"ledger database {written}: foreign schema ({named}: dpmem's schema has none)"


@pytest.mark.parametrize("kept", ROW_TABLES)
def test_a_schema_1_file_with_rows_is_refused_for_migration(written: Path, kept: str) -> None:
    execute(written, *(f"DELETE FROM {table}" for table in ROW_TABLES if table != kept))  # noqa: S608  # our tables
    assert execute(written, f"SELECT COUNT(*) FROM {kept}")[0][0] > 0  # noqa: S608
    execute(written, f"UPDATE meta SET value = '{LEGACY_SCHEMA_VERSION}' WHERE key = 'schema'")
    assert refusal(written) == (
        f"ledger database {written}: schema {LEGACY_SCHEMA_VERSION} (no tamper-evident chain); bind it once to "
        f"the interface that wrote it: dpmem ledger migrate {written} --interface FILE"
    )
    assert schema_version(written) == LEGACY_SCHEMA_VERSION  # the refused open wrote nothing


def test_a_schema_1_file_without_rows_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    execute(
        path,
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        f"INSERT INTO meta VALUES ('schema', '{LEGACY_SCHEMA_VERSION}')",
    )
    SQLiteLedgerStore(path, key=KEY).close()
    assert schema_version(path) == SCHEMA_VERSION
    assert execute(path, "SELECT seq, kind FROM chain") == [(1, "genesis")]


@pytest.mark.parametrize("version", ["3", "0", "", "2 "])
def test_an_unknown_schema_version_is_refused(written: Path, version: str) -> None:
    execute(written, f"UPDATE meta SET value = '{version}' WHERE key = 'schema'")
    assert refusal(written) == f"ledger database {written}: meta.schema is not version {SCHEMA_VERSION}"


@pytest.mark.parametrize(
    "statements",
    [["DELETE FROM chain WHERE seq = 1"], ["DELETE FROM chain"]],
    ids=["its first event", "every event, its ledgers kept"],
)
def test_a_chain_that_lost_its_first_event_is_refused(written: Path, statements: list[str]) -> None:
    execute(written, *statements)
    assert refusal(written) == f"ledger database {written}: the chain lost its first event (tampered)"


def test_identity_is_fixed_by_the_genesis_event_and_refused_without_one(written: Path) -> None:
    raw = sqlite3.connect(written)
    try:
        body, mac = raw.execute("SELECT body, mac FROM chain WHERE seq = 1").fetchone()
        assert identity(raw) == database_identity(str(body), str(mac))
        raw.execute("UPDATE chain SET body = '{}' WHERE seq = 1")  # a genesis from before identities
        assert identity(raw) == "genesis-" + str(mac)[:32]
        raw.execute("DELETE FROM chain")
        with pytest.raises(LedgerStoreError, match="^chain: no genesis event$"):
            identity(raw)
    finally:
        raw.close()
