"""Online backup and verification of SQLite ledger files (issue 13.7).

A committed charge can live only in the `-wal` file: after a crash, before the next
checkpoint, copying the `.db` file alone loses it, and with it the guarantee (a restored
ledger that forgot a charge admits selections past B_a). `backup_sqlite` copies through
SQLite's online backup API (`Connection.backup`), which reads the database as a connection
sees it, WAL frames included, page by page under a consistent snapshot, while other
processes keep charging. The copy is written beside the destination, made
self-contained (rollback journal), verified, and only then renamed into place.

`verify_sqlite` checks what a restored ledger must satisfy: the file is an SQLite database
that passes `PRAGMA integrity_check`, has the dpmem schema, is bound to an interface
fingerprint (or is reported unbound), keeps L_a <= B_a on every ledger, and its charge log
agrees with its ledgers: for every session and attribute, the sum of the eps of the
admitted releases charged to it equals the stored L_a, and no prefix of the log exceeds B_a.
"""

from __future__ import annotations

import os
import sqlite3
from fractions import Fraction
from pathlib import Path

import attrs

from dpmem_ref.errors import InputError
from dpmem_ref.ledger.contract import SCHEMA_VERSION, LedgerStoreError, fraction_from_text
from dpmem_ref.ledger.records import decode_release, decode_turn
from dpmem_ref.ledger.sqlite_schema import COLUMNS, describe_sqlite_error


@attrs.frozen
class LedgerReport:
    """The result of `verify_sqlite`: `problem` is None when every check passed."""

    path: str
    fingerprint: str | None
    sessions: int
    releases: int
    turns: int
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        if self.problem is not None:
            return f"ledger {self.path}: FAILED: {self.problem}"
        bound = f"fingerprint {self.fingerprint[:12]}" if self.fingerprint else "no interface bound yet"
        return (
            f"ledger {self.path}: ok (schema {SCHEMA_VERSION}, {bound}, {self.sessions} sessions, "
            f"{self.releases} releases, {self.turns} turns, L <= B on every ledger, charge log matches the ledgers)"
        )


def _existing_file(path: Path, field: str) -> Path:
    if not path.exists():
        raise InputError(field, "an existing SQLite ledger file", str(path))
    if not path.is_file():
        raise InputError(field, "a regular file (not a directory or device)", str(path))
    return path


def _open(path: Path) -> sqlite3.Connection:
    uri = path.resolve().as_uri().replace("file://", "file:", 1)
    return sqlite3.connect(f"{uri}?mode=rw", uri=True, isolation_level=None, timeout=60)


def _problems(connection: sqlite3.Connection) -> tuple[str | None, int, int, int, str | None]:
    """(fingerprint, sessions, releases, turns, first problem found or None)."""
    integrity = connection.execute("PRAGMA integrity_check").fetchone()
    if integrity is None or integrity[0] != "ok":
        return None, 0, 0, 0, "PRAGMA integrity_check does not report ok (corrupted file)"
    tables = {str(name) for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table, columns in COLUMNS.items():
        found = tuple(str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})"))
        if table not in tables or found != columns:
            return None, 0, 0, 0, f"foreign schema (table {table} missing or with other columns)"
    meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("schema") != SCHEMA_VERSION:
        return None, 0, 0, 0, f"meta.schema is not version {SCHEMA_VERSION}"
    fingerprint = meta.get("fingerprint")
    spent: dict[tuple[str, str, str], Fraction] = {}
    caps: dict[tuple[str, str, str], Fraction] = {}
    for user, interaction, attribute, spent_text, cap_text in connection.execute(
        "SELECT user, interaction, attribute, spent, cap FROM ledgers"
    ):
        key = (str(user), str(interaction), str(attribute))
        spent[key] = fraction_from_text(spent_text, "ledgers.spent")
        caps[key] = fraction_from_text(cap_text, "ledgers.cap")
        if spent[key] > caps[key]:
            return fingerprint, 0, 0, 0, f"C5: a ledger of attribute {attribute} exceeds its cap"
    sessions = {(u, i) for u, i, _ in spent}
    running = dict.fromkeys(spent, Fraction(0))
    releases = 0
    for row in connection.execute(
        "SELECT user, interaction, seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
        "FROM releases ORDER BY seq"
    ):
        releases += 1
        release = decode_release(row[2:])
        if not release.admitted and (release.charge_set or release.epsilon):
            return fingerprint, 0, 0, 0, f"releases seq {release.seq}: a fallback with a charge"
        for attribute in release.charge_set:
            key = (str(row[0]), str(row[1]), attribute)
            if key not in running:
                return fingerprint, 0, 0, 0, f"releases seq {release.seq}: charged to an attribute without a ledger"
            running[key] += release.epsilon
            if running[key] > caps[key]:
                return fingerprint, 0, 0, 0, f"C5: the charge log exceeds the cap of {attribute} at seq {release.seq}"
    for key, value in running.items():
        if value != spent[key]:
            return fingerprint, 0, 0, 0, f"ledger of attribute {key[2]} differs from the sum of its logged charges"
    turns = 0
    for (record,) in connection.execute("SELECT record FROM turns ORDER BY seq"):
        decode_turn(str(record))
        turns += 1
    return fingerprint, len(sessions), releases, turns, None


def verify_sqlite(path: str | Path) -> LedgerReport:
    """Check a ledger file (see the module docstring); raises InputError for a missing file
    and LedgerStoreError for one SQLite cannot read at all."""
    target = _existing_file(Path(path), "ledger file")
    try:
        connection = _open(target)
        try:
            fingerprint, sessions, releases, turns, problem = _problems(connection)
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise LedgerStoreError(f"ledger database {target}: {describe_sqlite_error(error)}") from None
    except LedgerStoreError as error:
        return LedgerReport(str(target), None, 0, 0, 0, problem=str(error))
    return LedgerReport(str(target), fingerprint, sessions, releases, turns, problem)


def backup_sqlite(source: str | Path, destination: str | Path) -> LedgerReport:
    """Copy a live ledger file, WAL frames included, to `destination` (not overwritten).

    Returns the verification of the copy; raises (and leaves nothing at `destination`) if
    the source is unreadable or the copy does not verify."""
    origin = _existing_file(Path(source), "ledger file")
    target = Path(destination)
    if target.exists() or target.is_symlink():
        raise InputError("backup destination", "a path that does not exist yet (never overwritten)", str(target))
    if not target.parent.is_dir():
        raise InputError("backup destination", "a path in an existing folder", str(target))
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        source_connection = _open(origin)
        try:
            copy = sqlite3.connect(str(partial), isolation_level=None)
            try:
                source_connection.backup(copy)  # one consistent snapshot, WAL frames included
                copy.execute("PRAGMA journal_mode = DELETE")  # the copy is one self-contained file
            finally:
                copy.close()
        finally:
            source_connection.close()
        report = verify_sqlite(partial)
        if not report.ok:
            raise LedgerStoreError(f"backup of {origin} does not verify: {report.problem}")
        os.replace(partial, target)
    except sqlite3.Error as error:
        partial.unlink(missing_ok=True)
        raise LedgerStoreError(f"ledger database {origin}: {describe_sqlite_error(error)}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return attrs.evolve(report, path=str(target))
