"""SQLite: a broken ledger file is refused with the store's own one line.

Classes: not a database (random bytes, text, zeroed header, truncated), corrupted pages,
foreign schema (other tables, our tables with other columns, another schema version), a
directory in its place, read-only, disk full. Each: `LedgerStoreError` (or `dpmem`
exit 2) with one line naming the file, never a raw sqlite3 exception; nothing
half-written and no committed charge lost. An empty file is a new, empty database.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.exits import EXIT_BAD_INPUT
from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest, SQLiteLedgerStore
from dpmem_ref.ledger.backup import LedgerReport, verify_sqlite
from dpmem_ref.ledger.sqlite.schema import describe_sqlite_error

CAPS = {"diabetes": Fraction(1000)}
ROOT = Path(__file__).resolve().parents[2]


def request(response_bytes: int = 0) -> ReleaseRequest:
    return ReleaseRequest(
        release_id=secrets.token_hex(8),
        turn_id=secrets.token_hex(8),
        index=0,
        slot="food",
        view="v" * max(1, response_bytes),
        fallback_view="generic",
        charge_set=frozenset({"diabetes"}),
        epsilon=Fraction(1, 3),
    )


def populated(path: Path, charges: int = 40) -> None:
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", CAPS)
    for _ in range(charges):
        session.charge_and_record(request(200))
    ledger_store.close()  # last connection: checkpointed into the .db file


def use(path: Path) -> None:
    """Everything a session does: open, load, charge."""
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", CAPS)
    session.load()
    session.charge_and_record(request())
    ledger_store.close()


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


def random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(path.stat().st_size))


def zeroed_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:100] = bytes(100)
    path.write_bytes(bytes(data))


def garbage_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for page in range(1, len(data) // 4096):  # every page but the header page
        data[page * 4096 : page * 4096 + 512] = os.urandom(512)
    path.write_bytes(bytes(data))


def text_file(path: Path) -> None:
    path.write_text("user,interaction,spent\nu,i,1/3\n" * 50)


def other_tables(path: Path) -> None:
    path.unlink()
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance REAL)")
    raw.commit()
    raw.close()


def other_columns(path: Path) -> None:
    path.unlink()
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    raw.execute("INSERT INTO meta VALUES ('schema', '1')")
    raw.execute("CREATE TABLE ledgers (user TEXT, attribute TEXT, spent REAL)")
    raw.commit()
    raw.close()


def other_version(path: Path) -> None:
    raw = sqlite3.connect(path)
    raw.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    raw.commit()
    raw.close()


def directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


BROKEN: dict[str, Callable[[Path], None]] = {
    "truncated": truncated,
    "random bytes": random_bytes,
    "zeroed header": zeroed_header,
    "garbage pages": garbage_pages,
    "text file": text_file,
    "foreign tables": other_tables,
    "our tables, other columns": other_columns,
    "other schema version": other_version,
    "a directory": directory,
}


def one_line(error: BaseException, path: Path) -> None:
    message = str(error)
    assert "\n" not in message and str(path) in message, message


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_files_are_refused_with_one_line(name: str, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    populated(path)
    BROKEN[name](path)
    with pytest.raises(LedgerStoreError) as refused:
        use(path)
    one_line(refused.value, path)
    error = refused.value  # no chained driver traceback either
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_verify_and_the_cli_refuse_broken_files(name: str, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    populated(path)
    BROKEN[name](path)
    try:
        report = verify_sqlite(path)
        assert not report.ok and "\n" not in report.line()
    except (LedgerStoreError, InputError) as error:
        assert "\n" not in str(error)
    run = subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "ledger", "verify", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert run.returncode in (1, EXIT_BAD_INPUT), run.stderr
    output = (run.stdout + run.stderr).strip()
    assert "Traceback" not in output and len(output.splitlines()) == 1, output


def test_an_empty_file_is_a_new_ledger(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    path.touch()
    use(path)
    assert verify_sqlite(path).ok


def _mount_tmpfs(folder: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (no CAP_SYS_ADMIN)")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"disk{len(mounted)}"
        folder.mkdir()
        _mount_tmpfs(folder, size)
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_read_only_file_system_is_refused_and_keeps_its_charges(tmpfs: Callable[[str], Path]) -> None:
    folder = tmpfs("4m")
    path = folder / "l.db"
    populated(path, charges=3)
    before = verify_sqlite(path)
    # A read-only mount: unlike file modes, it also binds root (CI runs as root).
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    with pytest.raises(LedgerStoreError) as refused:
        use(path)
    one_line(refused.value, path)
    assert "read-only" in str(refused.value) or "cannot open" in str(refused.value)
    subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
    after = verify_sqlite(path)
    assert after.ok and after.releases == before.releases == 3


def test_disk_full_is_refused_and_no_committed_charge_is_lost(tmpfs: Callable[[str], Path]) -> None:
    path = tmpfs("1m") / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", CAPS)
    committed = 0
    with pytest.raises(LedgerStoreError) as full:
        for _ in range(10_000):
            session.charge_and_record(request(200))
            committed += 1
    one_line(full.value, path)
    assert "disk full" in str(full.value) or "I/O" in str(full.value)
    assert committed > 10, committed
    ledger_store.close()
    # Every charge that returned is in the ledger; the refused one wrote nothing.
    reopened = SQLiteLedgerStore(path)
    snapshot = reopened.open_session("u", "i", CAPS).load()
    assert len(snapshot.releases) == committed
    assert snapshot.ledger_map()["diabetes"] == committed * Fraction(1, 3)
    reopened.close()
    assert verify_sqlite(path).ok


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (sqlite3.OperationalError("database is locked"), "database busy"),
        (sqlite3.OperationalError("database table is locked"), "database busy"),
        (sqlite3.OperationalError("Database Busy"), "database busy"),
        (sqlite3.DatabaseError("database is locked"), "SQLite error (DatabaseError)"),  # only the driver's busy class
        (sqlite3.OperationalError("database or disk is full"), "disk full (nothing was written)"),
        (sqlite3.OperationalError("disk I/O error"), "disk I/O error (nothing was written)"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "read-only (cannot write charges)"),
        (sqlite3.OperationalError("Read-only file system"), "read-only (cannot write charges)"),
        (sqlite3.DatabaseError("file is not a database"), "not an SQLite database"),
        (sqlite3.DatabaseError("database disk image is malformed"), "corrupted SQLite file"),
        (sqlite3.DatabaseError("Corrupt page 7"), "corrupted SQLite file"),
        (
            sqlite3.OperationalError("unable to open database file"),
            "cannot open the file (missing folder, a directory, or no permission)",
        ),
        (sqlite3.OperationalError("no such column: cap"), "foreign schema (not a dpmem ledger)"),
        (sqlite3.OperationalError("no such table: ledgers"), "foreign schema (not a dpmem ledger)"),
        (sqlite3.OperationalError("table ledgers has no column named cap"), "foreign schema (not a dpmem ledger)"),
        (sqlite3.IntegrityError("UNIQUE constraint failed: chain.seq"), "SQLite error (IntegrityError)"),
    ],
)
def test_each_driver_error_class_is_named_in_fixed_words(error: sqlite3.Error, words: str) -> None:
    """The class of the driver's error, matched case-blind, in the store's own words: never its text."""
    assert describe_sqlite_error(error) == words


def test_integrity_check_answers_sqlites_first_line_or_says_no_answer(tmp_path: Path) -> None:
    """SQLite's first line ("ok" from a sound file), or "no answer" when the pragma returns no
    row at all, as it does when an authorizer on the connection ignores pragmas."""
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db")
    ledger_store.open_session("u", "i", CAPS)
    assert ledger_store.integrity_check() == "ok"
    with ledger_store.reading() as connection:
        connection.set_authorizer(lambda action, *_: sqlite3.SQLITE_IGNORE if action == sqlite3.SQLITE_PRAGMA else 0)
    try:
        assert ledger_store.integrity_check() == "no answer"
    finally:
        with ledger_store.reading() as connection:
            connection.set_authorizer(None)
        ledger_store.close()


def test_verify_names_a_file_whose_integrity_check_fails(tmp_path: Path) -> None:
    """Pages SQLite can still read, but an index that no longer matches its table (its
    definition rewritten under it): `PRAGMA integrity_check` reports the missing rows, and
    verify refuses the file in its own words before reading a row of it."""
    path = tmp_path / "l.db"
    populated(path, charges=2)
    connection = sqlite3.connect(path)
    connection.execute("CREATE INDEX planted ON chain(kind)")
    connection.commit()
    connection.execute("PRAGMA writable_schema=ON")
    connection.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX planted ON chain(body)' WHERE name = 'planted'")
    connection.commit()
    connection.close()
    report = verify_sqlite(path)
    assert (report.ok, report.chain, report.problem) == (
        False,
        None,
        "PRAGMA integrity_check does not report ok (corrupted file)",
    )
    assert report.line() == f"ledger {path}: FAILED: PRAGMA integrity_check does not report ok (corrupted file)"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("foreign tables", "foreign schema (table meta missing or with other columns)"),
        (
            "our tables, other columns",
            "the chain table is missing (dropped: tampered); put the newest verified backup back with "
            "dpmem ledger restore BACKUP DB",
        ),
        ("other schema version", "meta.schema is not version 2"),
    ],
)
def test_verify_reports_a_file_of_another_schema_by_its_path_with_nothing_counted(
    name: str, problem: str, tmp_path: Path
) -> None:
    """A readable SQLite file that is not a dpmem ledger of this schema: the report names the
    file and the problem, and counts no session, release or turn (no row of it was read)."""
    path = tmp_path / "l.db"
    populated(path, charges=2)
    BROKEN[name](path)
    report = verify_sqlite(path)
    assert report == LedgerReport(str(path), None, 0, 0, 0, problem=problem)
    assert report.line() == f"ledger {path}: FAILED: {problem}"


@pytest.mark.parametrize("name", ["random bytes", "zeroed header", "text file"])
def test_verify_refuses_a_file_sqlite_cannot_read_naming_the_file_and_the_error_class(
    name: str, tmp_path: Path
) -> None:
    """No SQLite header at all: nothing to report on, so verify refuses with the store's one
    line, the file and the driver's error class in fixed words."""
    path = tmp_path / "l.db"
    populated(path, charges=2)
    BROKEN[name](path)
    with pytest.raises(LedgerStoreError) as refused:
        verify_sqlite(path)
    assert str(refused.value) == f"ledger database {path}: not an SQLite database"


def test_verify_refuses_a_missing_ledger_file_or_a_folder_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("folder.db").mkdir()
    with pytest.raises(InputError) as missing:
        verify_sqlite("missing.db")
    assert str(missing.value) == "ledger file: expected an existing SQLite ledger file, found 'missing.db'"
    with pytest.raises(InputError) as folder:
        verify_sqlite("folder.db")
    assert str(folder.value) == "ledger file: expected a regular file (not a directory or device), found 'folder.db'"
