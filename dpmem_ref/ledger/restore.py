"""`dpmem ledger restore` and `dpmem ledger migrate` for SQLite ledger files.

Restore. Every commit raises the database's high-water mark `DB.hwm` (the newest chain
seq and MAC, sealed with the key; `dpmem_ref.ledger.chain`), a file a restore does not
rewrite. `restore_sqlite(BACKUP, DB)` puts a verified backup in place only if its chain
reaches that mark: a backup missing commits made after it would re-grant their charges
(budget spent since the backup becomes spendable again, so the transcript's B_a no longer
bounds what was released). With `allow_rollback=True` the operator accepts that: the
restored chain gets a `rollback` event (from which seq back to which), which
`dpmem ledger verify` reports on every later run, and the mark is reset to the new head.
A database copied back by hand (without the command) is refused on open and by verify.

Migrate. A database written before the chain (schema 1) or with charges but no interface
fingerprint is refused on open (one line naming this command). `migrate_sqlite(DB,
fingerprint)` runs `dpmem_ref.ledger.migrate.migrate_rows` in one SQLite transaction.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.anchor import anchor_path, read_anchor, write_anchor
from dpmem_ref.ledger.backup import (
    LedgerReport,
    _existing_file,
    _open,
    _remove_ours,
    _snapshot,
    check_destination,
    sqlite_rows,
    verify_sqlite,
)
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment, reanchor_body, rollback_body
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.facts import check_fingerprint
from dpmem_ref.ledger.migrate import Routes, Sql, check_migrated_rows, migrate_rows
from dpmem_ref.ledger.sqlite.schema import SCHEMA, append_event, chain_head, describe_sqlite_error, identity

_T = TypeVar("_T")


def _sqlite(path: Path, action: Callable[[], _T]) -> _T:
    try:
        return action()
    except sqlite3.Error as error:
        raise LedgerStoreError(f"ledger database {path}: {describe_sqlite_error(error)}") from None


def _identity_of(path: Path) -> str:
    def look() -> str:
        connection = _open(path)
        try:
            return identity(connection)
        finally:
            connection.close()

    return _sqlite(path, look)


def _anchor_file(path: Path) -> Path:
    found = anchor_path(path, _identity_of(path))
    assert found is not None  # a SQLite file always has one
    return found


def _reference(live: Path, key: ChainKey) -> HighWater | None:
    """What the live database is known to have committed: its anchor, else its chain head
    (a live database whose anchor is foreign or edited is refused: the restore cannot tell)."""
    if not live.exists():
        return None
    mark = read_anchor(_anchor_file(live), key, _identity_of(live))
    if mark is not None:
        return mark

    def head() -> HighWater | None:
        connection = _open(live)
        try:
            found = chain_head(connection)
        finally:
            connection.close()
        return found if found.seq else None

    return _sqlite(live, head)


def _reaches(path: Path, mark: HighWater) -> bool:
    def look() -> bool:
        connection = _open(path)
        try:
            row = connection.execute("SELECT mac FROM chain WHERE seq = ?", (mark.seq,)).fetchone()
        finally:
            connection.close()
        return row is not None and str(row[0]) == mark.mac

    return _sqlite(path, look)


def restore_sqlite(
    backup: str | Path, database: str | Path, allow_rollback: bool = False, key: ChainKey | None = None
) -> LedgerReport:
    """Put the verified `backup` in place of `database` (see the module docstring)."""
    chain_key = key_from_environment() if key is None else key
    origin = _existing_file(Path(backup), "backup file")
    live = Path(database)
    if live.exists() and os.path.samefile(origin, live) or origin.name.endswith((".hwm", "-wal", "-shm", "-journal")):
        raise InputError("backup file", "a backup file apart from the live database and its side files", str(origin))
    checked = verify_sqlite(origin, chain_key, high_water=False)
    if not checked.ok:
        raise LedgerStoreError(f"backup {origin} does not verify: {checked.problem}")
    reference = _reference(live, chain_key)
    rollback = reference is not None and not _reaches(origin, reference)
    if rollback and not allow_rollback:
        assert reference is not None
        raise LedgerStoreError(
            f"backup {origin} is older than the high-water mark of {live} (chain seq {reference.seq}): restoring it "
            "would re-grant every charge committed since; pass --allow-rollback to restore it and record the rollback"
        )
    if not live.exists():
        check_destination(origin, live, "ledger database")
    partial = _sqlite(origin, lambda: _snapshot(origin, live.parent, live.name))
    try:
        head = _sqlite(partial, lambda: _finish(partial, chain_key, reference if rollback else None))
        report = verify_sqlite(partial, chain_key, high_water=False)
        if not report.ok:
            raise LedgerStoreError(f"restored copy of {origin} does not verify: {report.problem}")
        if live.exists():
            _sqlite(live, lambda: _copy_into(partial, live))  # under the live database's own lock
        else:
            os.link(partial, live)
    finally:
        _remove_ours(partial)
    write_anchor(_anchor_file(live), chain_key, _identity_of(live), head, force=True)
    return verify_sqlite(live, chain_key)


def _finish(partial: Path, key: ChainKey, rewound: HighWater | None) -> HighWater:
    connection = _open(partial)
    try:
        connection.execute("BEGIN IMMEDIATE")
        head = chain_head(connection)
        if rewound is not None:
            head = append_event(
                connection, key, "rollback", rollback_body(rewound.seq, rewound.mac, head.seq, head.mac)
            )
        connection.execute("COMMIT")
    finally:
        connection.close()
    return head


def _copy_into(partial: Path, live: Path) -> None:
    source = _open(partial)
    try:
        target = _open(live)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


def migrate_sqlite(
    database: str | Path, fingerprint: str, key: ChainKey | None = None, routes: Routes | None = None
) -> LedgerReport:
    """Bind a legacy (or unbound) ledger to `fingerprint` and chain its rows (module docstring);
    `routes` (the named interface's, `migrate.Routes.of`): the charge log is replayed against them."""
    chain_key = key_from_environment() if key is None else key
    check_fingerprint(fingerprint)
    path = _existing_file(Path(database), "ledger file")

    def run() -> HighWater | None:
        connection = _open(path)
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                for statement in SCHEMA.split(";"):  # the chain table of schema 2, if missing: in the transaction
                    if statement.strip():
                        connection.execute(statement)
                sql = Sql(
                    query=lambda text, params: connection.execute(text, params).fetchall(),
                    append=lambda kind, body: append_event(connection, chain_key, kind, body),
                )
                mark = migrate_rows(sql, str(path), fingerprint, chain_key, routes)
                check_migrated_rows(sqlite_rows(connection), chain_key, str(path))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        finally:
            connection.close()
        return mark

    mark = _sqlite(path, run)
    if mark is not None:
        write_anchor(_anchor_file(path), chain_key, _identity_of(path), mark, force=True)
    return verify_sqlite(path, chain_key)


def reanchor_sqlite(database: str | Path, key: ChainKey | None = None) -> LedgerReport:
    """`dpmem ledger reanchor DB`: the operator's explicit answer to a missing, foreign or
    unreadable anchor. The chain must verify on its own (every MAC, every row, C3 and C5);
    then ONE transaction appends a `reanchor` event (what the anchor was, the head it moves
    to), which every later verify reports, and the anchor is rewritten at that head. An
    anchor that is intact and reached needs nothing (refused: there is nothing to recover).
    What it accepts: that this file is the live database, as new as it looks."""
    chain_key = key_from_environment() if key is None else key
    path = _existing_file(Path(database), "ledger file")
    checked = verify_sqlite(path, chain_key, high_water=False)
    if not checked.ok:
        raise LedgerStoreError(f"ledger database {path} does not verify, not re-anchored: {checked.problem}")
    where = _anchor_file(path)
    try:
        previous = read_anchor(where, chain_key, _identity_of(path))
        state = "missing" if previous is None else f"at seq {previous.seq}"
    except LedgerStoreError as error:
        previous, state = None, f"refused ({str(error).split(': ', 1)[-1]})"
    if previous is not None and _reaches(path, previous):
        raise LedgerStoreError(f"ledger database {path}: its anchor {where} is intact and reached; nothing to re-anchor")

    def run() -> HighWater:
        connection = _open(path)
        try:
            connection.execute("BEGIN IMMEDIATE")
            head = append_event(connection, chain_key, "reanchor", reanchor_body(state, chain_head(connection)))
            connection.execute("COMMIT")
        finally:
            connection.close()
        return head

    head = _sqlite(path, run)
    write_anchor(where, chain_key, _identity_of(path), head, force=True)
    return verify_sqlite(path, chain_key)
