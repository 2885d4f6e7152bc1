"""The PostgreSQL schema's rules on open (`create_schema`) and the chain reads beside it, each in
isolation on the real test server: a schema-1 database (written before the chain) is upgraded
in place only while it holds no rows, and otherwise refused with the migration line; an unknown
version, a table with other columns and a chain that lost its first event are refused by name;
`chain_head`, `identity` and `holds` answer for an empty chain and for a written one.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import psycopg
import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.chain import GENESIS_MAC, ChainKey, HighWater, database_identity
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, SCHEMA_VERSION
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from dpmem_ref.ledger.postgres.schema import chain_head, holds, identity
from tests.ledger_fixtures import charge_request

KEY = ChainKey(secret=b"postgres-schema-key-0123456789ab", keyed=True)
CAPS = {"diabetes": Fraction(1000)}
ROW_TABLES = ("dpmem_ledgers", "dpmem_releases", "dpmem_turns")


def execute(database_url: str, statement: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        cursor = connection.execute(statement)
        return cursor.fetchall() if cursor.description is not None else []


def count(database_url: str, table: str) -> int:
    return int(execute(database_url, f"SELECT COUNT(*) FROM {table}")[0][0])  # noqa: S608  # our table names


def schema_version(database_url: str) -> str:
    return str(execute(database_url, "SELECT value FROM dpmem_meta WHERE key = 'schema'")[0][0])


@pytest.fixture
def written() -> str:
    """A database with one session, three charges and a turn, closed; its URL."""
    database_url = postgres_server.new_database()
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    session = ledger_store.open_session("u", "i", CAPS)
    for _ in range(3):
        session.charge_and_record(charge_request())
    session.record_turn("a1", TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=()))
    ledger_store.close()
    return database_url


def refusal(database_url: str) -> str:
    with pytest.raises(LedgerStoreError) as refused:
        PostgresLedgerStore(database_url, key=KEY)
    return str(refused.value)


def test_a_written_database_reopens_with_its_rows(written: str) -> None:
    ledger_store = PostgresLedgerStore(written, key=KEY)
    assert ledger_store.open_session("u", "i", CAPS).load().ledger_map() == {"diabetes": Fraction(1)}
    ledger_store.close()
    assert (count(written, "dpmem_releases"), count(written, "dpmem_turns")) == (3, 1)


@pytest.mark.parametrize("kept", ROW_TABLES)
def test_a_schema_1_database_with_rows_is_refused_for_migration(written: str, kept: str) -> None:
    for table in ROW_TABLES:
        if table != kept:
            execute(written, f"DELETE FROM {table}")  # noqa: S608  # our table names
    assert count(written, kept) > 0
    execute(written, f"UPDATE dpmem_meta SET value = '{LEGACY_SCHEMA_VERSION}' WHERE key = 'schema'")
    shown = postgres_server.shown(written)
    assert refusal(written) == (
        f"ledger database {shown}: schema {LEGACY_SCHEMA_VERSION} (no tamper-evident chain); bind it once to "
        f"the interface that wrote it: dpmem ledger migrate {shown} --interface FILE"
    )
    assert schema_version(written) == LEGACY_SCHEMA_VERSION  # the refused open wrote nothing


def test_a_schema_1_database_without_rows_is_upgraded_in_place() -> None:
    database_url = postgres_server.new_database()
    execute(database_url, "CREATE TABLE dpmem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    execute(database_url, f"INSERT INTO dpmem_meta VALUES ('schema', '{LEGACY_SCHEMA_VERSION}')")
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    ledger_store.close()
    assert schema_version(database_url) == SCHEMA_VERSION
    assert execute(database_url, "SELECT seq, kind FROM dpmem_chain") == [(1, "genesis")]


@pytest.mark.parametrize("version", ["3", "0", "", "2 "])
def test_an_unknown_schema_version_is_refused(written: str, version: str) -> None:
    execute(written, f"UPDATE dpmem_meta SET value = '{version}' WHERE key = 'schema'")
    assert refusal(written) == (
        f"ledger database {postgres_server.shown(written)}: dpmem_meta.schema is not version {SCHEMA_VERSION}"
    )


def test_a_missing_schema_version_is_refused(written: str) -> None:
    execute(written, "DELETE FROM dpmem_meta WHERE key = 'schema'")
    execute(
        written, "CREATE RULE keep_it_missing AS ON INSERT TO dpmem_meta WHERE NEW.key = 'schema' DO INSTEAD NOTHING"
    )
    assert refusal(written) == (
        f"ledger database {postgres_server.shown(written)}: dpmem_meta.schema is not version {SCHEMA_VERSION}"
    )


def test_a_table_with_other_columns_is_refused_by_name() -> None:
    database_url = postgres_server.new_database()
    execute(database_url, "CREATE TABLE dpmem_turns (user_name TEXT, extra TEXT)")
    assert refusal(database_url) == (
        f"ledger database {postgres_server.shown(database_url)}: foreign schema (table dpmem_turns has other columns)"
    )


def test_a_chain_that_lost_its_first_event_is_refused(written: str) -> None:
    execute(written, "DELETE FROM dpmem_chain WHERE seq = 1")
    assert refusal(written) == (
        f"ledger database {postgres_server.shown(written)}: the chain lost its first event (tampered)"
    )


@pytest.fixture
def connection(written: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(written, autocommit=True) as opened:
        yield opened


def test_chain_head_identity_and_holds_on_a_written_chain(connection: psycopg.Connection[Any]) -> None:
    seq, mac = connection.execute("SELECT seq, mac FROM dpmem_chain ORDER BY seq DESC LIMIT 1").fetchone() or (0, "")
    head = chain_head(connection)
    assert head == HighWater(int(seq), str(mac)) and head.seq > 1
    genesis = connection.execute("SELECT body, mac FROM dpmem_chain WHERE seq = 1").fetchone()
    assert genesis is not None
    assert holds(connection, head) and holds(connection, HighWater(1, str(genesis[1])))
    assert not holds(connection, HighWater(head.seq, "0" * 64))  # the seq is there, not that MAC
    assert not holds(connection, HighWater(head.seq + 1, head.mac))  # past the head
    assert identity(connection) == database_identity(str(genesis[0]), str(genesis[1]))


def test_a_genesis_without_a_database_id_is_identified_by_its_mac(connection: psycopg.Connection[Any]) -> None:
    """A genesis written before identities existed: its MAC stands in (chain.database_identity)."""
    row = connection.execute("SELECT mac FROM dpmem_chain WHERE seq = 1").fetchone()
    assert row is not None
    connection.execute("UPDATE dpmem_chain SET body = '{}' WHERE seq = 1")
    assert identity(connection) == "genesis-" + str(row[0])[:32]


def test_chain_head_identity_and_holds_on_an_empty_chain(connection: psycopg.Connection[Any]) -> None:
    written_identity = identity(connection)
    connection.execute("DELETE FROM dpmem_chain")
    assert chain_head(connection) == HighWater(0, GENESIS_MAC)
    assert not holds(connection, HighWater(1, written_identity))
    with pytest.raises(LedgerStoreError, match="^chain: no genesis event$"):
        identity(connection)
