"""SQLite side of budget scopes (issue 23): the interface rebind in one transaction.

`SQLiteLedgerStore.rebind` calls `rebind_sqlite` inside its BEGIN IMMEDIATE transaction:
compare-and-set the fingerprint, write the runtime's meta rows, carry every session the
caller names over to its new caps (`rebound_caps`, C5 re-checked), and append the chain's
"rebind" event that records all of it (`dpmem ledger verify` replays it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from fractions import Fraction

from dpmem_ref.ledger.chain import ChainKey, HighWater, rebind_body
from dpmem_ref.ledger.contract import SessionKey, fraction_to_text, interface_mismatch, needs_migration
from dpmem_ref.ledger.scopes import rebound_caps
from dpmem_ref.ledger.sqlite_schema import append_event, has_history, ledger_rows


def rebind_sqlite(
    connection: sqlite3.Connection,
    path: str,
    chain_key: ChainKey,
    expected: str | None,
    fingerprint: str,
    rows: Mapping[str, str],
    caps_for: Callable[[SessionKey], Mapping[str, Fraction] | None] | None,
) -> HighWater:
    found = connection.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    stored = None if found is None else str(found[0])
    if stored != expected:
        raise interface_mismatch(path, stored or "", fingerprint)
    if stored is None and has_history(connection):  # issue 21.6: charges of an unknown interface
        raise needs_migration(path, "charges without an interface fingerprint")
    connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('fingerprint', ?)", (fingerprint,))
    connection.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", sorted(rows.items()))
    carried: list[tuple[SessionKey, dict[str, Fraction], dict[str, Fraction]]] = []
    sessions = connection.execute("SELECT DISTINCT user, interaction FROM ledgers ORDER BY user, interaction")
    for user, interaction in sessions.fetchall() if caps_for is not None else ():
        session = SessionKey(user=str(user), interaction=str(interaction))
        caps = caps_for(session) if caps_for is not None else None
        if caps is None:
            continue
        spent, _ = ledger_rows(connection, session)
        table = rebound_caps(spent, caps, f"session {session.user}/{session.interaction}")
        connection.executemany(
            "INSERT OR REPLACE INTO ledgers (user, interaction, attribute, spent, cap) VALUES (?, ?, ?, ?, ?)",
            [
                (session.user, session.interaction, a, fraction_to_text(s), fraction_to_text(c))
                for a, (s, c) in sorted(table.items())
            ],
        )
        carried.append((session, {a: s for a, (s, _) in table.items()}, {a: c for a, (_, c) in table.items()}))
    return append_event(connection, chain_key, "rebind", rebind_body(expected, fingerprint, rows, carried))
