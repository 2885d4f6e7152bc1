"""`dpmem ledger backup` keeps the charges that live only in the -wal file.

A process commits charges and is SIGKILLed before any checkpoint: its commits are durable
(in the WAL) but not yet in the .db file. Copying the .db alone loses them; the online
backup API copies the database as a connection sees it, so the backup holds every charge.
`dpmem ledger verify` checks schema, fingerprint, L <= B and the charge log in one line.
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest, SQLiteLedgerStore
from dpmem_ref.ledger.backup import _open, backup_sqlite, verify_sqlite
from dpmem_ref.ledger.restore import restore_sqlite

ROOT = Path(__file__).resolve().parents[2]
CAPS = {"diabetes": Fraction(2), "debt": Fraction(5)}
CHARGES = 5
FINGERPRINT = "c" * 64


def request(attribute: str, eps: Fraction) -> ReleaseRequest:
    return ReleaseRequest(
        release_id=secrets.token_hex(8),
        turn_id=secrets.token_hex(8),
        index=0,
        slot="food",
        view="specific",
        fallback_view="generic",
        charge_set=frozenset({attribute}),
        epsilon=eps,
    )


def _charge_then_wait(path: str, ready: object) -> None:
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", CAPS, fingerprint=FINGERPRINT)
    for _ in range(CHARGES):
        session.charge_and_record(request("debt", Fraction(1)))
    ready.set()  # type: ignore[attr-defined]
    signal.pause()  # SIGKILLed here: no close, no checkpoint


def dpmem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )


def committed_releases(path: Path) -> int:
    raw = sqlite3.connect(path)
    try:
        return int(raw.execute("SELECT count(*) FROM releases").fetchone()[0])
    finally:
        raw.close()


def test_backup_keeps_charges_that_live_only_in_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    SQLiteLedgerStore(path).close()  # an empty, checkpointed ledger file
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    child = context.Process(target=_charge_then_wait, args=(str(path), ready))
    child.start()
    assert ready.wait(60)
    os.kill(child.pid or 0, signal.SIGKILL)
    child.join(10)
    assert Path(f"{path}-wal").stat().st_size > 0  # the commits are in the WAL only
    # Copying the .db file alone (without its -wal) loses every committed charge.
    naive = tmp_path / "copied.db"
    shutil.copyfile(path, naive)
    assert committed_releases(naive) == 0
    # The online backup holds every one of them, and verifies.
    run = dpmem("ledger", "backup", str(path), str(tmp_path / "backup.db"))
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.strip().splitlines()) == 1 and "ok" in run.stdout
    backup = tmp_path / "backup.db"
    assert not Path(f"{backup}-wal").exists()  # one self-contained file
    assert committed_releases(backup) == CHARGES
    report = verify_sqlite(backup)
    assert report.ok and report.releases == CHARGES and report.fingerprint == FINGERPRINT
    with pytest.raises(LedgerStoreError, match="a backup anchor.*dpmem ledger restore"):
        SQLiteLedgerStore(backup)  # a backup is never opened as a live ledger: it goes through restore
    restore_sqlite(backup, tmp_path / "restored.db")
    restored = SQLiteLedgerStore(tmp_path / "restored.db").open_session("u", "i", CAPS, fingerprint=FINGERPRINT).load()
    assert restored.ledger_map() == {"diabetes": 0, "debt": CHARGES}
    verify = dpmem("ledger", "verify", str(backup))
    assert verify.returncode == 0 and verify.stdout.count("\n") == 1 and "c" * 12 in verify.stdout


def test_backup_never_overwrites_and_leaves_nothing_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    SQLiteLedgerStore(path).open_session("u", "i", CAPS).charge_and_record(request("debt", Fraction(1)))
    existing = tmp_path / "existing.db"
    existing.write_text("keep me")
    assert dpmem("ledger", "backup", str(path), str(existing)).returncode == 2
    assert existing.read_text() == "keep me"
    broken = tmp_path / "broken.db"
    broken.write_bytes(os.urandom(8192))
    run = dpmem("ledger", "backup", str(broken), str(tmp_path / "out.db"))
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1
    assert not (tmp_path / "out.db").exists() and not (tmp_path / "out.db.partial").exists()


def tamper(path: Path, statement: str) -> None:
    raw = sqlite3.connect(path)
    raw.execute(statement)
    raw.commit()
    raw.close()


@pytest.mark.parametrize(
    ("statement", "words"),
    [
        # The chain is replayed first and names the first row that differs from it.
        ("UPDATE ledgers SET spent = '3/1' WHERE attribute = 'diabetes'", "ledgers row (u, i, diabetes): differs"),
        ("UPDATE ledgers SET spent = '1/1' WHERE attribute = 'diabetes'", "ledgers row (u, i, diabetes): differs"),
        ("UPDATE ledgers SET spent = '0/1' WHERE attribute = 'debt'", "ledgers row (u, i, debt): differs"),
        ("UPDATE releases SET admitted = 0 WHERE seq = 1", "releases seq 1: differs from its chain event"),
        ("UPDATE releases SET epsilon = '9/1' WHERE seq = 1", "releases seq 1: differs from its chain event"),
        ("UPDATE releases SET charge_set = 'nonsense' WHERE seq = 1", "unreadable"),
        ("UPDATE ledgers SET spent = '0.5' WHERE attribute = 'debt'", "p/q"),
        ("DELETE FROM meta WHERE key = 'schema'", "meta.schema"),
        ("ALTER TABLE turns ADD COLUMN extra TEXT", "foreign schema"),
    ],
)
def test_verify_finds_an_inconsistent_ledger(tmp_path: Path, statement: str, words: str) -> None:
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", CAPS, fingerprint=FINGERPRINT)
    session.charge_and_record(request("debt", Fraction(2)))
    ledger_store.close()
    assert verify_sqlite(path).ok
    tamper(path, statement)
    run = dpmem("ledger", "verify", str(path))
    assert run.returncode == 1, run.stderr
    assert words in run.stdout and run.stdout.count("\n") == 1, run.stdout
    with pytest.raises(LedgerStoreError, match="does not verify"):  # a backup of it is refused
        backup_sqlite(path, tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists() and not (tmp_path / "copy.db.partial").exists()


def test_verify_waits_up_to_a_minute_for_a_lock_a_writer_holds(tmp_path: Path) -> None:
    """verify, backup and restore run beside a live server: their connection waits for a lock
    another connection holds (here released after 0.3 s) instead of refusing the file, for up
    to 60 s (SQLite's busy timeout of that connection, read back from it)."""
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    ledger_store.open_session("u", "i", CAPS, fingerprint=FINGERPRINT).charge_and_record(request("debt", Fraction(1)))
    ledger_store.close()
    backup_sqlite(path, tmp_path / "b.db")  # a rollback-journal file: an exclusive lock keeps readers out
    writer = sqlite3.connect(tmp_path / "b.db", isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.3, lambda: writer.execute("COMMIT"))
    release.start()
    try:
        report = verify_sqlite(tmp_path / "b.db", high_water=False)
    finally:
        release.join()
        writer.close()
    assert report.ok and report.releases == 1, report.line()
    connection = _open(tmp_path / "b.db")
    try:
        assert connection.execute("PRAGMA busy_timeout").fetchone() == (60_000,)
    finally:
        connection.close()


def test_a_ledger_under_a_name_uris_escape_is_backed_up_verified_and_restored(tmp_path: Path) -> None:
    """The file is opened through a `file:` URI: a space, '?', '#', '%' or ':' in its path is
    percent-encoded, never read as the URI's query or fragment."""
    folder = tmp_path / "a b?c#d%25e:f"
    folder.mkdir()
    path = folder / "l?.db"
    ledger_store = SQLiteLedgerStore(path)
    ledger_store.open_session("u", "i", CAPS, fingerprint=FINGERPRINT).charge_and_record(request("debt", Fraction(1)))
    ledger_store.close()
    assert verify_sqlite(path).releases == 1
    backup = backup_sqlite(path, folder / "b#1.db")
    assert (backup.ok, backup.path, backup.releases) == (True, str(folder / "b#1.db"), 1)
    restored = restore_sqlite(folder / "b#1.db", folder / "r%20.db")
    assert (restored.ok, restored.path, restored.releases) == (True, str(folder / "r%20.db"), 1)
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".db") == ["b#1.db", "l?.db", "r%20.db"]
