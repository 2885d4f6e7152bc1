"""The PostgreSQL ledger schema, its foreign-schema check, and driver errors in words."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import psycopg

from dpmem_ref.errors import ContractViolation
from dpmem_ref.ledger.contract import LedgerStoreError, SessionKey, fraction_from_text, fraction_to_text
from dpmem_ref.ledger.scopes import rebound_caps

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
"""
COLUMNS = {
    "dpmem_meta": ("key", "value"),
    "dpmem_ledgers": ("user_name", "interaction", "attribute", "spent", "cap"),
    "dpmem_releases": (
        "seq", "user_name", "interaction", "release_id", "turn_id", "slot_index",
        "slot", "view", "admitted", "charge_set", "epsilon",
    ),
    "dpmem_turns": ("seq", "user_name", "interaction", "turn_id", "record"),
}  # fmt: skip
SCHEMA_LOCK = 0x64706D656D  # pg_advisory_xact_lock key: one schema creation at a time ("dpmem")

_BY_SQLSTATE = {
    "28P01": "authentication failed (wrong user or password)",
    "28000": "authentication failed (unknown role or not allowed)",
    "3D000": "the database does not exist",
    "42P01": "foreign schema (a dpmem table is missing)",
    "42703": "foreign schema (a dpmem table has other columns)",
    "42501": "permission denied",
    "53100": "disk full on the server (nothing was written)",
    "25006": "read-only transaction (cannot write charges)",
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


def rebind_database(
    connection: psycopg.Connection[Any],
    name: str,
    expected: str | None,
    fingerprint: str,
    rows: Mapping[str, str],
    caps_for: Callable[[SessionKey], Mapping[str, Fraction] | None] | None,
) -> None:
    """`PostgresLedgerStore.rebind` in its transaction: compare-and-set the fingerprint,
    write the meta rows, carry the sessions' ledgers over (`rebind_sessions`)."""
    from dpmem_ref.ledger.contract import interface_mismatch

    connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
    found = connection.execute("SELECT value FROM dpmem_meta WHERE key = 'fingerprint' FOR UPDATE").fetchone()
    stored = None if found is None else str(found[0])
    if stored != expected:
        raise interface_mismatch(name, stored or "", fingerprint)
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO dpmem_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = %s",
            [(k, v, v) for k, v in sorted({**rows, "fingerprint": fingerprint}.items())],
        )
    if caps_for is not None:
        rebind_sessions(connection, caps_for)


def rebind_sessions(
    connection: psycopg.Connection[Any], caps_for: Callable[[SessionKey], Mapping[str, Fraction] | None]
) -> None:
    """Inside `PostgresLedgerStore.rebind`'s transaction: carry every session's ledgers over
    to the caps `caps_for` gives it (skipped where it gives None), C5 re-checked."""
    keys = connection.execute(
        "SELECT DISTINCT user_name, interaction FROM dpmem_ledgers ORDER BY user_name, interaction"
    ).fetchall()
    for user, interaction in keys:
        key = SessionKey(user=str(user), interaction=str(interaction))
        caps = caps_for(key)
        if caps is None:
            continue
        spent, _ = locked_ledgers(connection, key, lock=True)
        table = rebound_caps(spent, caps, f"session {key.user}/{key.interaction}")
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO dpmem_ledgers (user_name, interaction, attribute, spent, cap) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (user_name, interaction, attribute) "
                "DO UPDATE SET cap = EXCLUDED.cap",
                [
                    (key.user, key.interaction, a, fraction_to_text(s), fraction_to_text(c))
                    for a, (s, c) in sorted(table.items())
                ],
            )
