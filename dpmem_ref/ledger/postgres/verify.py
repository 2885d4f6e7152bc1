"""`dpmem ledger verify | migrate postgresql://...`: the chain replay and the migration on
PostgreSQL.

One REPEATABLE READ READ ONLY snapshot of every dpmem table, then `replay` (the same
checks as for SQLite). PostgreSQL keeps no `.hwm` file: its backups and point-in-time
recovery are the server's (docs/durability.md, threat model), so a truncated tail is
caught here only against a mark the operator passes (`mark`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import psycopg

from dpmem_ref.ledger.anchor import anchor_path, read_anchor, write_anchor
from dpmem_ref.ledger.backup import LedgerReport, pre_chain_problem
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment, reanchor_body, rows_identity
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, LedgerStoreError
from dpmem_ref.ledger.migrate import Routes, Sql, check_migrated_rows, migrate_rows
from dpmem_ref.ledger.postgres.schema import (
    COLUMNS,
    CONNECT_TIMEOUT_S,
    SCHEMA,
    append_event,
    chain_head,
    describe_postgres_error,
    holds,
    identity,
    lock_chain,
    read_anchor_row,
    write_anchor_row,
)
from dpmem_ref.ledger.url_forms import check_postgres_url, redact_url
from dpmem_ref.ledger.verify import LedgerRows, replay


def _rows(connection: psycopg.Connection[Any]) -> LedgerRows | str:
    found = connection.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ANY(%s) ORDER BY table_name, ordinal_position",
        (list(COLUMNS),),
    ).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in found:
        tables.setdefault(str(table), []).append(str(column))
    if "dpmem_chain" not in tables and "dpmem_meta" in tables:
        schema = connection.execute("SELECT value FROM dpmem_meta WHERE key = 'schema'").fetchone()
        pre_chain = schema is not None and schema[0] == LEGACY_SCHEMA_VERSION
        return pre_chain_problem(pre_chain, {"dpmem_ledgers", "dpmem_releases", "dpmem_turns"} <= set(tables))
    for table, columns in COLUMNS.items():
        if tuple(tables.get(table, ())) != columns:
            return f"foreign schema (table {table} missing or with other columns)"

    def rows(sql: str) -> tuple[tuple[object, ...], ...]:
        return tuple(tuple(row) for row in connection.execute(sql))

    return LedgerRows(
        meta=rows("SELECT key, value FROM dpmem_meta"),
        chain=rows("SELECT seq, kind, body, mac FROM dpmem_chain ORDER BY seq"),
        ledgers=rows("SELECT user_name, interaction, attribute, spent, cap FROM dpmem_ledgers"),
        releases=rows(
            "SELECT user_name, interaction, seq, release_id, turn_id, slot_index, slot, view, "
            "CASE WHEN admitted THEN 1 ELSE 0 END, charge_set, epsilon FROM dpmem_releases ORDER BY seq"
        ),
        turns=rows("SELECT user_name, interaction, seq, turn_id, record FROM dpmem_turns ORDER BY seq"),
    )


def _anchor(connection: psycopg.Connection[Any], name: str, key: ChainKey, rows: LedgerRows) -> HighWater | None:
    """The database's anchor: the file under DPMEM_LEDGER_ANCHOR_DIR when set, else its row."""
    ident = rows_identity(rows.chain)
    if ident is None:
        return None
    where = anchor_path(None, ident)
    if where is not None:
        return read_anchor(where, key, ident)
    if connection.execute("SELECT to_regclass('dpmem_anchor')").fetchone() == (None,):
        return None
    return read_anchor_row(connection, name, key, ident)


def verify_postgres(
    url: str, key: ChainKey | None = None, mark: HighWater | None = None, high_water: bool = True
) -> LedgerReport:
    """Verify the ledger tables at `url` against their chain and its anchor (read only);
    `mark`: a head recorded off-host, checked instead of the anchor."""
    name = redact_url(check_postgres_url(url))
    chain_key = key_from_environment() if key is None else key
    anchor_problem: str | None = None
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            with connection.transaction():
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                rows = _rows(connection)
                if high_water and mark is None and not isinstance(rows, str):
                    try:
                        mark = _anchor(connection, name, chain_key, rows)
                    except LedgerStoreError as error:
                        anchor_problem = str(error)
    except psycopg.Error as error:
        raise LedgerStoreError(f"ledger database {name}: {describe_postgres_error(error)}") from None
    if isinstance(rows, str):
        return LedgerReport(name, None, 0, 0, 0, problem=rows)
    result = replay(rows, chain_key, mark)
    problem = result.problem or anchor_problem
    if problem is None and high_water and mark is None and result.events > 1:
        problem = "anchor missing (a truncated tail would go unnoticed)"
    return LedgerReport(name, result.fingerprint, result.sessions, result.releases, result.turns, problem, result, mark)


_TABLE = re.compile(r"\b(FROM|INTO) (meta|ledgers|releases|turns|chain)\b")


def _postgres_sql(connection: psycopg.Connection[Any], key: ChainKey) -> Sql:
    """The migration's SQLite spelling, renamed for the dpmem_* tables (user -> user_name)."""

    def query(text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        spelled = re.sub(r"\buser\b", "user_name", _TABLE.sub(r"\1 dpmem_\2", text)).replace("?", "%s")
        cursor = connection.execute(spelled, tuple(params))
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    return Sql(query=query, append=lambda kind, body: append_event(connection, key, kind, body))


def migrate_postgres(
    url: str, fingerprint: str, key: ChainKey | None = None, routes: Routes | None = None
) -> LedgerReport:
    """Bind and chain a legacy PostgreSQL ledger (`dpmem_ref.ledger.migrate`), one transaction."""
    name = redact_url(check_postgres_url(url))
    chain_key = key_from_environment() if key is None else key
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            with connection.transaction():
                lock_chain(connection)
                connection.execute(SCHEMA)  # the chain table of schema 2, if missing
                head = migrate_rows(_postgres_sql(connection, chain_key), name, fingerprint, chain_key, routes)
                check_migrated_rows(_rows(connection), chain_key, name)
                ident = identity(connection)
                anchor_file = anchor_path(None, ident)
                if head is not None and anchor_file is None:
                    write_anchor_row(connection, chain_key, ident, head)
    except psycopg.Error as error:
        raise LedgerStoreError(f"ledger database {name}: {describe_postgres_error(error)}") from None
    if head is not None and anchor_file is not None:
        write_anchor(anchor_file, chain_key, ident, head, force=True)
    return verify_postgres(url, chain_key)


def reanchor_postgres(url: str, key: ChainKey | None = None) -> LedgerReport:
    """`dpmem ledger reanchor postgresql://...`: the chain must verify on its own; then ONE
    transaction appends a `reanchor` event and moves the anchor (row or file) to the head
    (see `restore.reanchor_sqlite`)."""
    name = redact_url(check_postgres_url(url))
    chain_key = key_from_environment() if key is None else key
    checked = verify_postgres(url, chain_key, high_water=False)
    if not checked.ok or checked.chain is None or checked.chain.identity is None:
        raise LedgerStoreError(f"ledger database {name} does not verify, not re-anchored: {checked.problem}")
    ident = checked.chain.identity
    anchor_file = anchor_path(None, ident)
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            with connection.transaction():
                lock_chain(connection)
                connection.execute(SCHEMA)
                try:
                    previous = (
                        read_anchor(anchor_file, chain_key, ident)
                        if anchor_file is not None
                        else read_anchor_row(connection, name, chain_key, ident)
                    )
                    state = "missing" if previous is None else f"at seq {previous.seq}"
                except LedgerStoreError as error:
                    previous, state = None, f"refused ({str(error).split(': ', 1)[-1]})"
                if previous is not None and holds(connection, previous):
                    raise LedgerStoreError(f"ledger database {name}: its anchor is intact and reached; nothing to re-anchor")
                head = append_event(connection, chain_key, "reanchor", reanchor_body(state, chain_head(connection)))
                if anchor_file is None:
                    write_anchor_row(connection, chain_key, ident, head)
    except psycopg.Error as error:
        raise LedgerStoreError(f"ledger database {name}: {describe_postgres_error(error)}") from None
    if anchor_file is not None:
        write_anchor(anchor_file, chain_key, ident, head, force=True)
    return verify_postgres(url, chain_key)
