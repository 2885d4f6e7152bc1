"""The PostgreSQL ledger schema, its foreign-schema check, and driver errors in words."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import psycopg

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.ledger.anchor import LIVE, anchor_text, parse_anchor
from dpmem_ref.ledger.chain import GENESIS_MAC, ChainKey, HighWater, check_genesis, database_identity, genesis_body
from dpmem_ref.ledger.checkpoint import Checkpoint, TailRows, Verified, checkpoint_text
from dpmem_ref.ledger.checkpoint import verify_on_open as verify_checkpoint
from dpmem_ref.ledger.codecs import fraction_from_text
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, SCHEMA_VERSION, LedgerStoreError, needs_migration
from dpmem_ref.ledger.facts import SessionKey

# "user" is reserved in PostgreSQL: the key column is user_name. Exact values as "p/q" text.
SCHEMA = """
CREATE TABLE IF NOT EXISTS dpmem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dpmem_ledgers (
    user_name TEXT NOT NULL, interaction TEXT NOT NULL, attribute TEXT NOT NULL,
    spent TEXT NOT NULL, cap TEXT NOT NULL,
    PRIMARY KEY (user_name, interaction, attribute));
CREATE TABLE IF NOT EXISTS dpmem_releases (
    seq BIGSERIAL PRIMARY KEY,
    user_name TEXT NOT NULL, interaction TEXT NOT NULL,
    release_id TEXT NOT NULL UNIQUE, turn_id TEXT NOT NULL, slot_index INTEGER NOT NULL,
    slot TEXT NOT NULL, view TEXT NOT NULL, admitted BOOLEAN NOT NULL,
    charge_set TEXT NOT NULL, epsilon TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS dpmem_releases_by_session ON dpmem_releases (user_name, interaction, seq);
CREATE TABLE IF NOT EXISTS dpmem_turns (
    seq BIGSERIAL PRIMARY KEY,
    user_name TEXT NOT NULL, interaction TEXT NOT NULL, turn_id TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS dpmem_turns_by_session ON dpmem_turns (user_name, interaction, seq);
CREATE TABLE IF NOT EXISTS dpmem_chain (
    seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dpmem_anchor (id SMALLINT PRIMARY KEY CHECK (id = 1), body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dpmem_checkpoint (id SMALLINT PRIMARY KEY CHECK (id = 1), body TEXT NOT NULL);
"""
COLUMNS = {
    "dpmem_meta": ("key", "value"),
    "dpmem_ledgers": ("user_name", "interaction", "attribute", "spent", "cap"),
    "dpmem_releases": (
        "seq", "user_name", "interaction", "release_id", "turn_id", "slot_index",
        "slot", "view", "admitted", "charge_set", "epsilon",
    ),
    "dpmem_turns": ("seq", "user_name", "interaction", "turn_id", "record"),
    "dpmem_chain": ("seq", "kind", "body", "mac"),
}  # fmt: skip
SCHEMA_LOCK = 0x64706D656D  # pg_advisory_xact_lock key: one schema creation at a time ("dpmem")
CHAIN_LOCK = 0x64706D6368  # pg_advisory_xact_lock key: one chain append at a time ("dpmch")
# How long one connection attempt may take, in seconds (psycopg's connect_timeout): the store,
# and verify, migrate and reanchor. Given explicitly, it overrides PGCONNECT_TIMEOUT and
# psycopg's 130 s default, so a server that accepts and never answers is refused in bounded time.
CONNECT_TIMEOUT_S = 10

_BY_SQLSTATE = {
    "28P01": "authentication failed (wrong user or password)",
    "28000": "authentication failed (unknown role or not allowed)",
    "3D000": "the database does not exist",
    "42P01": "foreign schema (a dpmem table is missing)",
    "42703": "foreign schema (a dpmem table has other columns)",
    "42501": "permission denied",
    "53100": "disk full on the server (nothing was written)",
    "25006": "read-only transaction (cannot write charges)",
    # a statement_timeout (the URL's options) or a cancel request: the server answered, so not
    # "cannot reach the server (timeout)", which its text ("statement timeout") would match below
    "57014": "a statement was cancelled (statement_timeout or a cancel request)",
    "57P01": "the server is shutting down",
    "57P02": "the server is shutting down",
    "57P03": "the server is starting up or not accepting connections",
}
_BY_TEXT = (
    ("password authentication failed", "authentication failed (wrong user or password)"),
    ("authentication failed", "authentication failed (wrong user or password)"),
    ("no password supplied", "authentication failed (no password given)"),
    ("role", "authentication failed (unknown role or not allowed)"),
    ("database", "the database does not exist"),
    ("connection refused", "cannot reach the server"),
    ("no such file or directory", "cannot reach the server"),
    ("timeout", "cannot reach the server (timeout)"),
    ("could not translate host name", "cannot reach the server (unknown host)"),
)


def describe_postgres_error(error: Any) -> str:
    """The class of a psycopg error, in words (never the driver's multi-line text)."""
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str) and state in _BY_SQLSTATE:
        return _BY_SQLSTATE[state]
    text = str(error).lower()
    for needle, words in _BY_TEXT:
        if needle in text and (needle != "database" or "does not exist" in text):
            if needle == "role" and "does not exist" not in text:
                continue
            return words
    return f"PostgreSQL error ({type(error).__name__}{f' {state}' if state else ''})"


def locked_ledgers(
    connection: psycopg.Connection[Any], key: SessionKey, lock: bool
) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    rows = connection.execute(
        "SELECT attribute, spent, cap FROM dpmem_ledgers WHERE user_name = %s AND interaction = %s "
        "ORDER BY attribute" + (" FOR UPDATE" if lock else ""),
        (key.user, key.interaction),
    ).fetchall()
    if not rows:
        raise LedgerStoreError("ledgers: no ledger rows for this session (open_session first)")
    spent = {str(a): fraction_from_text(s, "ledgers.spent") for a, s, _ in rows}
    caps = {str(a): fraction_from_text(c, "ledgers.cap") for a, _, c in rows}
    for attribute in spent:
        if spent[attribute] > caps[attribute]:
            raise ContractViolation("C5", f"attribute {attribute}: stored ledger exceeds its cap")
    return spent, caps


def lock_chain(connection: psycopg.Connection[Any]) -> None:
    """Every write transaction takes the chain lock first (before any row lock, so
    transactions never deadlock): appends are serialised, and under READ COMMITTED each
    later statement sees the head the previous holder committed."""
    connection.execute("SELECT pg_advisory_xact_lock(%s)", (CHAIN_LOCK,))


def append_event(connection: psycopg.Connection[Any], key: ChainKey, kind: str, body: str) -> HighWater:
    """Append one chain event (the caller holds `lock_chain`)."""
    row = connection.execute("SELECT seq, mac FROM dpmem_chain ORDER BY seq DESC LIMIT 1").fetchone()
    head = HighWater(0, GENESIS_MAC) if row is None else HighWater(int(row[0]), str(row[1]))
    seq = head.seq + 1
    mac = key.mac(seq, kind, head.mac, body)
    connection.execute("INSERT INTO dpmem_chain (seq, kind, body, mac) VALUES (%s, %s, %s, %s)", (seq, kind, body, mac))
    return HighWater(seq, mac)


def chain_head(connection: psycopg.Connection[Any]) -> HighWater:
    row = connection.execute("SELECT seq, mac FROM dpmem_chain ORDER BY seq DESC LIMIT 1").fetchone()
    return HighWater(0, GENESIS_MAC) if row is None else HighWater(int(row[0]), str(row[1]))


def identity(connection: psycopg.Connection[Any]) -> str:
    row = connection.execute("SELECT body, mac FROM dpmem_chain WHERE seq = 1").fetchone()
    if row is None:
        raise LedgerStoreError("chain: no genesis event")
    return database_identity(str(row[0]), str(row[1]))


def read_anchor_row(connection: psycopg.Connection[Any], name: str, key: ChainKey, ident: str) -> HighWater | None:
    """The anchor the database keeps in its `dpmem_anchor` row (None when there is none)."""
    row = connection.execute("SELECT body FROM dpmem_anchor WHERE id = 1").fetchone()
    return None if row is None else parse_anchor(key, str(row[0]), f"{name} dpmem_anchor", ident, (LIVE,))


def write_anchor_row(connection: psycopg.Connection[Any], key: ChainKey, ident: str, mark: HighWater) -> None:
    """Set the anchor row to `mark` inside the caller's write transaction (under the chain lock,
    so it moves with the head: never down)."""
    connection.execute(
        "INSERT INTO dpmem_anchor (id, body) VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
        (anchor_text(key, ident, LIVE, mark),),
    )


def holds(connection: psycopg.Connection[Any], mark: HighWater) -> bool:
    """The chain holds the anchor's event: seq AND MAC."""
    row = connection.execute("SELECT mac FROM dpmem_chain WHERE seq = %s", (mark.seq,)).fetchone()
    return row is not None and str(row[0]) == mark.mac


def rewound(name: str, mark: HighWater, where: str) -> LedgerStoreError:
    return LedgerStoreError(
        f"ledger database {name}: its chain does not reach its high-water mark (the event of {where}, seq "
        f"{mark.seq}): rewound, truncated or forked; restore the newest backup of the server"
    )


def missing_anchor(name: str, where: str) -> LedgerStoreError:
    return LedgerStoreError(
        f"ledger database {name}: its anchor ({where}) is missing, so a truncated or older copy would go "
        f"unnoticed; if this is the live database, re-anchor it (recorded in its chain): dpmem ledger reanchor URL"
    )


def _count(connection: psycopg.Connection[Any], table: str) -> int:
    found = connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()  # noqa: S608  # our table names
    return 0 if found is None else int(found[0])


def read_tail(connection: psycopg.Connection[Any], seq: int, release: int, turn: int) -> TailRows:
    """The chain events after `seq` and the release and turn rows after `release` / `turn`
    (see the SQLite twin)."""

    def rows(sql: str, after: int) -> tuple[tuple[object, ...], ...]:
        return tuple(tuple(found) for found in connection.execute(sql, (after,)))

    return (
        rows("SELECT seq, kind, body, mac FROM dpmem_chain WHERE seq > %s ORDER BY seq", seq),
        rows(
            "SELECT user_name, interaction, seq, release_id, turn_id, slot_index, slot, view, "
            "CASE WHEN admitted THEN 1 ELSE 0 END, charge_set, epsilon FROM dpmem_releases WHERE seq > %s ORDER BY seq",
            release,
        ),
        rows("SELECT user_name, interaction, seq, turn_id, record FROM dpmem_turns WHERE seq > %s ORDER BY seq", turn),
    )


def verify_on_open(connection: psycopg.Connection[Any], key: ChainKey, ident: str) -> tuple[Verified, bool]:
    """In one snapshot: `checkpoint.verify_on_open` over this database's rows."""

    def rows(sql: str) -> tuple[tuple[object, ...], ...]:
        return tuple(tuple(found) for found in connection.execute(sql))

    stored = connection.execute("SELECT body FROM dpmem_checkpoint WHERE id = 1").fetchone()
    rest = (rows("SELECT key, value FROM dpmem_meta"),
            rows("SELECT user_name, interaction, attribute, spent, cap FROM dpmem_ledgers"),
            (_count(connection, "dpmem_releases"), _count(connection, "dpmem_turns")))  # fmt: skip
    return verify_checkpoint(
        key, ident, None if stored is None else stored[0],
        lambda seq, mac: holds(connection, HighWater(seq, mac)), lambda *after: read_tail(connection, *after), rest,
    )  # fmt: skip


def store_checkpoint(connection: psycopg.Connection[Any], key: ChainKey, ident: str, checkpoint: Checkpoint) -> None:
    """Inside the next write transaction (a refused open writes nothing)."""
    connection.execute(
        "INSERT INTO dpmem_checkpoint (id, body) VALUES (1, %s) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
        (checkpoint_text(key, ident, checkpoint),),
    )


def create_schema(connection: psycopg.Connection[Any], name: str, key: ChainKey) -> None:
    """The tables (or the check that they are ours), the schema version, the chain's genesis."""
    connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
    rows = connection.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ANY(%s) ORDER BY table_name, ordinal_position",
        (list(COLUMNS),),
    ).fetchall()
    found: dict[str, list[str]] = {}
    for table, column in rows:
        found.setdefault(str(table), []).append(str(column))
    for table, columns in found.items():
        if tuple(columns) != COLUMNS[table]:
            raise LedgerStoreError(f"ledger database {name}: foreign schema (table {table} has other columns)")
    connection.execute(SCHEMA)
    connection.execute(
        "INSERT INTO dpmem_meta (key, value) VALUES ('schema', %s) ON CONFLICT DO NOTHING", (SCHEMA_VERSION,)
    )
    row = connection.execute("SELECT value FROM dpmem_meta WHERE key = 'schema'").fetchone()
    if row is not None and row[0] == LEGACY_SCHEMA_VERSION:
        tables = ("dpmem_ledgers", "dpmem_releases", "dpmem_turns")
        if any(connection.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in tables):  # noqa: S608
            raise needs_migration(name, f"schema {LEGACY_SCHEMA_VERSION} (no tamper-evident chain)")
        connection.execute("UPDATE dpmem_meta SET value = %s WHERE key = 'schema'", (SCHEMA_VERSION,))
    elif row is None or row[0] != SCHEMA_VERSION:
        raise LedgerStoreError(f"ledger database {name}: dpmem_meta.schema is not version {SCHEMA_VERSION}")
    lock_chain(connection)
    genesis = connection.execute("SELECT body FROM dpmem_chain WHERE seq = 1").fetchone()
    if genesis is not None:
        check_genesis(name, key, str(genesis[0]))
    elif connection.execute("SELECT 1 FROM dpmem_chain LIMIT 1").fetchone():
        raise LedgerStoreError(f"ledger database {name}: the chain lost its first event (tampered)")
    else:
        append_event(connection, key, "genesis", genesis_body(key, SCHEMA_VERSION))
