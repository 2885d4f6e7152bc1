"""The SQLite ledger schema, its foreign-schema check, and driver errors in words."""

from __future__ import annotations

import sqlite3
from fractions import Fraction

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.ledger.chain import GENESIS_MAC, ChainKey, HighWater, check_genesis, database_identity, genesis_body
from dpmem_ref.ledger.checkpoint import Checkpoint, TailRows, Verified, checkpoint_text
from dpmem_ref.ledger.checkpoint import verify_on_open as verify_checkpoint
from dpmem_ref.ledger.codecs import fraction_from_text
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, SCHEMA_VERSION, LedgerStoreError, needs_migration
from dpmem_ref.ledger.facts import SessionKey

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledgers (
    user TEXT NOT NULL, interaction TEXT NOT NULL, attribute TEXT NOT NULL,
    spent TEXT NOT NULL, cap TEXT NOT NULL,
    PRIMARY KEY (user, interaction, attribute));
CREATE TABLE IF NOT EXISTS releases (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL, interaction TEXT NOT NULL,
    release_id TEXT NOT NULL UNIQUE, turn_id TEXT NOT NULL, slot_index INTEGER NOT NULL,
    slot TEXT NOT NULL, view TEXT NOT NULL, admitted INTEGER NOT NULL CHECK (admitted IN (0, 1)),
    charge_set TEXT NOT NULL, epsilon TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS releases_by_session ON releases (user, interaction, seq);
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL, interaction TEXT NOT NULL, turn_id TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_by_session ON turns (user, interaction, seq);
CREATE TABLE IF NOT EXISTS chain (
    seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint (id INTEGER PRIMARY KEY CHECK (id = 1), body TEXT NOT NULL);
"""
COLUMNS = {
    "meta": ("key", "value"),
    "ledgers": ("user", "interaction", "attribute", "spent", "cap"),
    "releases": (
        "seq", "user", "interaction", "release_id", "turn_id", "slot_index",
        "slot", "view", "admitted", "charge_set", "epsilon",
    ),
    "turns": ("seq", "user", "interaction", "turn_id", "record"),
    "chain": ("seq", "kind", "body", "mac"),
}  # fmt: skip


def describe_sqlite_error(error: sqlite3.Error) -> str:
    """The class of a driver error, in words (never the driver's own multi-line text)."""
    text = str(error).lower()
    if isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return "database busy"
    for needle, words in (
        ("disk is full", "disk full (nothing was written)"),
        ("disk i/o", "disk I/O error (nothing was written)"),
        ("readonly", "read-only (cannot write charges)"),
        ("read-only", "read-only (cannot write charges)"),
        ("not a database", "not an SQLite database"),
        ("malformed", "corrupted SQLite file"),
        ("corrupt", "corrupted SQLite file"),
        ("unable to open", "cannot open the file (missing folder, a directory, or no permission)"),
        ("no such column", "foreign schema (not a dpmem ledger)"),
        ("no such table", "foreign schema (not a dpmem ledger)"),
        ("has no column", "foreign schema (not a dpmem ledger)"),
    ):
        if needle in text:
            return words
    return f"SQLite error ({type(error).__name__})"


def ledger_rows(connection: sqlite3.Connection, key: SessionKey) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    rows = connection.execute(
        "SELECT attribute, spent, cap FROM ledgers WHERE user = ? AND interaction = ?", (key.user, key.interaction)
    ).fetchall()
    if not rows:
        raise LedgerStoreError("ledgers: no ledger rows for this session (open_session first)")
    spent = {a: fraction_from_text(s, "ledgers.spent") for a, s, _ in rows}
    caps = {a: fraction_from_text(c, "ledgers.cap") for a, _, c in rows}
    for attribute in spent:
        if spent[attribute] > caps[attribute]:
            raise ContractViolation("C5", f"attribute {attribute}: stored ledger exceeds its cap")
    return spent, caps


def chain_head(connection: sqlite3.Connection) -> HighWater:
    row = connection.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    return HighWater(0, GENESIS_MAC) if row is None else HighWater(int(row[0]), str(row[1]))


def append_event(connection: sqlite3.Connection, key: ChainKey, kind: str, body: str) -> HighWater:
    """Append one chain event inside the caller's write transaction (BEGIN IMMEDIATE holds
    the write lock, so the head read here is the head the event commits after)."""
    head = chain_head(connection)
    seq = head.seq + 1
    mac = key.mac(seq, kind, head.mac, body)
    connection.execute("INSERT INTO chain (seq, kind, body, mac) VALUES (?, ?, ?, ?)", (seq, kind, body, mac))
    return HighWater(seq, mac)


def foreign_objects(connection: sqlite3.Connection) -> str | None:
    """The file's triggers and views, named ("trigger t, view v"), or None: dpmem's schema has
    neither, and one planted by whoever can write the file (a restored backup) would run inside
    every later commit, rewriting charges after they are sealed."""
    found = connection.execute(
        "SELECT type, name FROM sqlite_master WHERE type IN ('trigger', 'view') ORDER BY type, name"
    ).fetchall()
    return ", ".join(f"{kind} {name}" for kind, name in found) or None


def open_chain(connection: sqlite3.Connection, database: str, key: ChainKey) -> HighWater | None:
    """Schema version, legacy refusal, objects outside the schema and the chain's genesis (one
    key per database)."""
    planted = foreign_objects(connection)
    if planted is not None:
        raise LedgerStoreError(f"ledger database {database}: foreign schema ({planted}: dpmem's schema has none)")
    connection.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is not None and row[0] == LEGACY_SCHEMA_VERSION:
        if any(connection.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in ("ledgers", "releases", "turns")):
            raise needs_migration(database, f"schema {LEGACY_SCHEMA_VERSION} (no tamper-evident chain)")
        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))  # empty: upgrade
    elif row is None or row[0] != SCHEMA_VERSION:
        raise LedgerStoreError(f"ledger database {database}: meta.schema is not version {SCHEMA_VERSION}")
    genesis = connection.execute("SELECT kind, body FROM chain WHERE seq = 1").fetchone()
    if genesis is not None:
        check_genesis(database, key, str(genesis[1]))
        return None
    if chain_head(connection).seq or connection.execute("SELECT 1 FROM ledgers LIMIT 1").fetchone():
        raise LedgerStoreError(f"ledger database {database}: the chain lost its first event (tampered)")
    return append_event(connection, key, "genesis", genesis_body(key, SCHEMA_VERSION))


def identity(connection: sqlite3.Connection) -> str:
    """The database identity its genesis event fixes (`chain.database_identity`)."""
    row = connection.execute("SELECT body, mac FROM chain WHERE seq = 1").fetchone()
    if row is None:
        raise LedgerStoreError("chain: no genesis event")
    return database_identity(str(row[0]), str(row[1]))


def rewound(database: str, mark: HighWater, where: str) -> LedgerStoreError:
    return LedgerStoreError(
        f"ledger database {database}: its chain does not reach its high-water mark (the event of {where}, seq "
        f"{mark.seq}): rewound, truncated or forked; put the newest backup back with dpmem ledger restore BACKUP "
        f"{database} (--allow-rollback restores an older one, recorded)"
    )


def check_high_water(connection: sqlite3.Connection, database: str, mark: HighWater | None, where: str = "") -> None:
    """Refuse a database whose chain does not hold its anchor's event, seq AND MAC (a
    copied-back older file, a truncated or forked tail): restore is the one way, recorded."""
    if mark is None:
        return
    row = connection.execute("SELECT mac FROM chain WHERE seq = ?", (mark.seq,)).fetchone()
    if row is None or str(row[0]) != mark.mac:
        raise rewound(database, mark, where)


def read_tail(connection: sqlite3.Connection, seq: int, release: int, turn: int) -> TailRows:
    """The chain events after `seq` and the release and turn rows after `release` / `turn`,
    read the way verification compares them (`checkpoint.Verified.advance`)."""

    def rows(sql: str, after: int) -> tuple[tuple[object, ...], ...]:
        return tuple(tuple(found) for found in connection.execute(sql, (after,)))

    return (
        rows("SELECT seq, kind, body, mac FROM chain WHERE seq > ? ORDER BY seq", seq),
        rows(
            "SELECT user, interaction, seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
            "FROM releases WHERE seq > ? ORDER BY seq",
            release,
        ),
        rows("SELECT user, interaction, seq, turn_id, record FROM turns WHERE seq > ? ORDER BY seq", turn),
    )


def verify_on_open(connection: sqlite3.Connection, key: ChainKey, ident: str) -> tuple[Verified, bool]:
    """In one read transaction: `checkpoint.verify_on_open` over this database's rows."""

    def rows(sql: str) -> tuple[tuple[object, ...], ...]:
        return tuple(tuple(found) for found in connection.execute(sql))

    def holds(seq: int, mac: str) -> bool:
        held = connection.execute("SELECT mac FROM chain WHERE seq = ?", (seq,)).fetchone()
        return held is not None and str(held[0]) == mac

    stored = connection.execute("SELECT body FROM checkpoint WHERE id = 1").fetchone()
    counts = [int(connection.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in ("releases", "turns")]  # noqa: S608
    rest = (rows("SELECT key, value FROM meta"), rows("SELECT user, interaction, attribute, spent, cap FROM ledgers"),
            (counts[0], counts[1]))  # fmt: skip
    return verify_checkpoint(
        key, ident, None if stored is None else stored[0], holds, lambda *after: read_tail(connection, *after), rest
    )


def store_checkpoint(connection: sqlite3.Connection, key: ChainKey, ident: str, checkpoint: Checkpoint) -> None:
    """Inside the next write transaction (a refused or read-only open writes nothing)."""
    text = checkpoint_text(key, ident, checkpoint)
    connection.execute("INSERT OR REPLACE INTO checkpoint (id, body) VALUES (1, ?)", (text,))


def has_history(connection: sqlite3.Connection) -> bool:
    """Committed releases or turns (ledgers still at zero carry no charge to misattribute)."""
    return any(connection.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in ("releases", "turns"))  # noqa: S608
