"""Online backup and verification of SQLite ledger files.

A committed charge can live only in the `-wal` file: after a crash, before the next
checkpoint, copying the `.db` file alone loses it, and with it the guarantee (a restored
ledger that forgot a charge admits selections past B_a). `backup_sqlite` copies through
SQLite's online backup API (`Connection.backup`), which reads the database as a connection
sees it, WAL frames included, page by page under a consistent snapshot, while other
processes keep charging. The copy is written to a fresh temporary file of a unique name
beside the destination (created exclusively, so it never names an existing file), made
self-contained (rollback journal), verified, and only then linked into place (never
overwriting). The destination may not be the source, its `-wal` / `-shm` / `-journal`
files or its high-water mark; the command deletes only the temporary file it created.

`verify_sqlite` checks what a restored ledger must satisfy: the file is an SQLite database
that passes `PRAGMA integrity_check` and has the dpmem schema, then
`dpmem_ref.ledger.verify`: the HMAC chain verifies with the key, every ledger L_a is the
sum of the committed charges and <= B_a at every prefix, every table equals what the
chain committed (first bad row named), and the chain reaches the high-water mark (`DB.hwm`).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.anchor import (
    BACKUP,
    HIGH_WATER_SUFFIX,
    LIVE,
    anchor_path,
    high_water_path,
    read_anchor,
    write_anchor,
)
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment, rows_identity
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, SCHEMA_VERSION, LedgerStoreError
from dpmem_ref.ledger.sqlite.schema import COLUMNS, describe_sqlite_error, foreign_objects
from dpmem_ref.ledger.url_forms import redact_url
from dpmem_ref.ledger.verify import LedgerRows, Replay, replay

SIDE_FILES = ("-wal", "-shm", "-journal", HIGH_WATER_SUFFIX)


@attrs.frozen
class LedgerReport:
    """The result of `verify_sqlite`: `problem` is None when every check passed."""

    path: str
    fingerprint: str | None
    sessions: int
    releases: int
    turns: int
    problem: str | None = None
    chain: Replay | None = None
    high_water: HighWater | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        if self.problem is not None:
            return f"ledger {self.path}: FAILED: {self.problem}"
        bound = f"fingerprint {self.fingerprint[:12]}" if self.fingerprint else "no interface bound yet"
        chain = ""
        if self.chain is not None:
            chain = f", chain of {self.chain.events} events verified (key id {self.chain.key_id})"
            if self.high_water is not None:
                chain += f", high-water mark seq {self.high_water.seq} reached"
            if self.chain.rollbacks:
                chain += f"; ROLLBACK recorded ({len(self.chain.rollbacks)}): " + "; ".join(self.chain.rollbacks)
        return (
            f"ledger {self.path}: ok (schema {SCHEMA_VERSION}, {bound}, {self.sessions} sessions, "
            f"{self.releases} releases, {self.turns} turns, L <= B on every ledger, charge log matches the ledgers"
            f"{chain})"
        )


def _existing_file(path: Path, field: str) -> Path:
    shown = redact_url(str(path))  # a mistyped DSN given as a path is never echoed
    if not path.exists():
        raise InputError(field, "an existing SQLite ledger file", shown)
    if not path.is_file():
        raise InputError(field, "a regular file (not a directory or device)", shown)
    return path


def _open(path: Path, read_only: bool = False) -> sqlite3.Connection:
    uri = path.resolve().as_uri().replace("file://", "file:", 1)
    connection = sqlite3.connect(
        f"{uri}?mode={'ro' if read_only else 'rw'}", uri=True, isolation_level=None, timeout=60
    )
    # Corrupted bytes decode to text that no check accepts (never a driver exception).
    connection.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    return connection


def sqlite_rows(connection: sqlite3.Connection) -> LedgerRows:
    """Every row, as `replay` reads them."""

    def rows(sql: str) -> tuple[tuple[object, ...], ...]:
        return tuple(tuple(row) for row in connection.execute(sql))

    return LedgerRows(
        meta=rows("SELECT key, value FROM meta"),
        chain=rows("SELECT seq, kind, body, mac FROM chain ORDER BY seq"),
        ledgers=rows("SELECT user, interaction, attribute, spent, cap FROM ledgers"),
        releases=rows(
            "SELECT user, interaction, seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
            "FROM releases ORDER BY seq"
        ),
        turns=rows("SELECT user, interaction, seq, turn_id, record FROM turns ORDER BY seq"),
    )


def _schema_problem(connection: sqlite3.Connection) -> str | None:
    """The file is an intact SQLite database with the dpmem schema of this version."""
    integrity = connection.execute("PRAGMA integrity_check").fetchone()
    if integrity is None or integrity[0] != "ok":
        return "PRAGMA integrity_check does not report ok (corrupted file)"
    tables = {str(name) for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "chain" not in tables and "meta" in tables:
        schema = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        pre_chain = schema is not None and schema[0] == LEGACY_SCHEMA_VERSION
        return pre_chain_problem(pre_chain, tables >= {"meta", "ledgers", "releases", "turns"})
    for table, columns in COLUMNS.items():
        found = tuple(str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})"))
        if table not in tables or found != columns:
            return f"foreign schema (table {table} missing or with other columns)"
    meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("schema") != SCHEMA_VERSION:
        return f"meta.schema is not version {SCHEMA_VERSION}"
    planted = foreign_objects(connection)
    if planted is not None:
        return f"foreign schema ({planted}: dpmem's schema has none)"
    return None


def anchor_of(target: Path, key: ChainKey, identity: str) -> tuple[Path, HighWater | None]:
    """The anchor that vouches for `target`: a backup's own `DEST.hwm` (role backup) when there
    is one, else the live anchor (`chain.anchor_path`, role live). Raises LedgerStoreError for
    an unreadable, edited, foreign or wrong-role anchor."""
    beside = high_water_path(target)
    try:
        mark = read_anchor(beside, key, identity, (BACKUP,))
        if mark is not None:
            return beside, mark
    except LedgerStoreError:
        pass  # not a backup's anchor: the live one decides (and names the problem)
    live = anchor_path(target, identity)
    assert live is not None
    return live, read_anchor(live, key, identity, (LIVE,))


def pre_chain_problem(pre_chain: bool, tables: bool) -> str:
    """A ledger without its chain table: a genuine pre-chain database (schema 1) is named as
    such, with the migration that binds it; a schema-2 ledger whose chain was dropped is
    tampering, and the advice never names a command that would re-chain (reset) it."""
    if pre_chain and tables:
        return "a ledger written before the tamper-evident chain (schema 1): bind and chain it once with dpmem ledger migrate DB --interface FILE"
    return "the chain table is missing (dropped: tampered); put the newest verified backup back with dpmem ledger restore BACKUP DB"


def verify_sqlite(path: str | Path, key: ChainKey | None = None, high_water: bool = True) -> LedgerReport:
    """Check a ledger file (see the module docstring); raises InputError for a missing file
    and LedgerStoreError for one SQLite cannot read at all. `high_water=False` checks the
    chain alone (a copy without its anchor: a truncated tail then goes unnoticed)."""
    target = _existing_file(Path(path), "ledger file")
    chain_key = key_from_environment() if key is None else key
    try:
        connection = _open(target)
        try:
            problem = _schema_problem(connection)
            if problem is not None:
                return LedgerReport(str(target), None, 0, 0, 0, problem=problem)
            rows = sqlite_rows(connection)
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise LedgerStoreError(f"ledger database {target}: {describe_sqlite_error(error)}") from None
    mark: HighWater | None = None
    anchor_problem: str | None = None
    where = high_water_path(target)
    identity = rows_identity(rows.chain)
    if high_water and identity is not None:
        try:
            where, mark = anchor_of(target, chain_key, identity)
        except LedgerStoreError as error:
            anchor_problem = str(error)
    result = replay(rows, chain_key, mark)  # names the first bad row
    problem = result.problem or anchor_problem
    if problem is None and high_water and mark is None:
        problem = (
            f"anchor {where} missing (a truncated tail would go unnoticed; --no-high-water checks the chain alone; "
            f"dpmem ledger reanchor re-anchors a live database, recorded in its chain)"
        )
    return LedgerReport(
        str(target), result.fingerprint, result.sessions, result.releases, result.turns, problem, result, mark
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_destination(origin: Path, target: Path, field: str, side_file: bool = False) -> None:
    """Never the live database, one of its side files, or a name SQLite would take for one
    (`side_file`: `target` is the new file's own .hwm)."""
    if target.exists() or target.is_symlink():
        raise InputError(field, "a path that does not exist yet (never overwritten)", str(target))
    if not target.parent.is_dir():
        raise InputError(field, "a path in an existing folder", str(target))
    side = [origin] + [origin.with_name(origin.name + suffix) for suffix in SIDE_FILES]
    if any(_same_file(target, p) for p in side) or (not side_file and target.name.endswith(SIDE_FILES)):
        raise InputError(field, "a new file apart from the live database and its -wal/-shm/-journal/.hwm", str(target))


def _snapshot(origin: Path, directory: Path, name: str) -> Path:
    """The online backup of `origin` into a fresh file of a unique name (ours to delete)."""
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=directory)
    os.close(fd)
    partial = Path(temporary)
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
    except BaseException:
        _remove_ours(partial)
        raise
    return partial


def _remove_ours(partial: Path) -> None:
    for path in (partial, partial.with_name(partial.name + "-journal")):
        path.unlink(missing_ok=True)


def backup_sqlite(source: str | Path, destination: str | Path, key: ChainKey | None = None) -> LedgerReport:
    """Copy a live ledger file, WAL frames included, to `destination` (not overwritten),
    with `destination.hwm` at the copy's chain head.

    Returns the verification of the copy; raises (and leaves nothing at `destination`) if
    the source is unreadable or the copy does not verify."""
    origin = _existing_file(Path(source), "ledger file")
    target = Path(destination)
    check_destination(origin, target, "backup destination")
    check_destination(origin, high_water_path(target), "backup destination", side_file=True)
    chain_key = key_from_environment() if key is None else key
    try:
        partial = _snapshot(origin, target.parent, target.name)
    except sqlite3.Error as error:
        raise LedgerStoreError(f"ledger database {origin}: {describe_sqlite_error(error)}") from None
    try:
        report = verify_sqlite(partial, chain_key, high_water=False)
        if not report.ok or report.chain is None:
            raise LedgerStoreError(f"backup of {origin} does not verify: {report.problem}")
        head = _head(partial)
        os.link(partial, target)  # fails rather than overwrite a file created meanwhile
    except FileExistsError:
        raise InputError(
            "backup destination", "a path that does not exist yet (never overwritten)", str(target)
        ) from None
    except sqlite3.Error as error:
        raise LedgerStoreError(f"ledger database {origin}: {describe_sqlite_error(error)}") from None
    finally:
        _remove_ours(partial)
    identity = report.chain.identity if report.chain is not None else None
    assert identity is not None  # a verified chain has a genesis
    write_anchor(high_water_path(target), chain_key, identity, head, role=BACKUP)
    return attrs.evolve(report, path=str(target), high_water=head)


def _head(path: Path) -> HighWater:
    connection = _open(path)
    try:
        seq, mac = connection.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    finally:
        connection.close()
    return HighWater(int(seq), str(mac))
