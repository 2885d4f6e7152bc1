"""`dpmem ledger verify postgresql://...`: the chain replay on a PostgreSQL ledger.

One REPEATABLE READ READ ONLY snapshot of every dpmem table, then `replay` (the same
checks as for SQLite). PostgreSQL keeps no `.hwm` file: its backups and point-in-time
recovery are the server's (docs/durability.md, threat model), so a truncated tail is
caught here only against a mark the operator passes (`mark`).
"""

from __future__ import annotations

from typing import Any

import psycopg

from dpmem_ref.ledger.backup import LedgerReport
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.postgres_schema import COLUMNS, describe_postgres_error
from dpmem_ref.ledger.replay import LedgerRows, replay
from dpmem_ref.ledger.urls import check_postgres_url, redact_url


def _rows(connection: psycopg.Connection[Any]) -> LedgerRows | str:
    found = connection.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ANY(%s) ORDER BY table_name, ordinal_position",
        (list(COLUMNS),),
    ).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in found:
        tables.setdefault(str(table), []).append(str(column))
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


def verify_postgres(url: str, key: ChainKey | None = None, mark: HighWater | None = None) -> LedgerReport:
    """Verify the ledger tables at `url` against their chain (read only)."""
    name = redact_url(check_postgres_url(url))
    chain_key = key_from_environment() if key is None else key
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
            with connection.transaction():
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                rows = _rows(connection)
    except psycopg.Error as error:
        raise LedgerStoreError(f"ledger database {name}: {describe_postgres_error(error)}") from None
    if isinstance(rows, str):
        return LedgerReport(name, None, 0, 0, 0, problem=rows)
    result = replay(rows, chain_key, mark)
    return LedgerReport(
        name, result.fingerprint, result.sessions, result.releases, result.turns, result.problem, result, mark
    )
