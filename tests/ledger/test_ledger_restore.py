"""Backups never touch their source; restore never silently rewinds B_a.

Backup: the destination may not be the live database, its -wal / -shm / -journal, its
.hwm, or a name SQLite would take for a side file; an existing file named like a
temporary (DEST.partial, anything) is never deleted or overwritten; the live ledger is
intact afterwards. Restore: a backup older than the high-water mark is refused (the
issue's run: 5 charged releases in an interaction whose budget admits 3); with
--allow-rollback it is restored, the rollback is an event that verify reports, and a
database copied back by hand is refused on open and by verify.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_ledger_concurrency import ONE_SLOT

from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.ledger import LedgerStoreError, SQLiteLedgerStore
from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession
from tests.kernel_fixtures import run_cli

KEY = "restore-test-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def _chain_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DPMEM_LEDGER_KEY", KEY)
    monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)
    yield


def admitted_turns(path: Path, turns: int) -> int:
    """Charged selections admitted in `turns` turns (B = 2, eps = 2/3: at most 3 ever)."""
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = SQLiteLedgerStore(path)
    try:
        session = DurableSession.open(
            loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(1), turn_deadline_s=None
        )
        return sum(sum(session.run_turn("dinner").record.admitted) for _ in range(turns))
    finally:
        ledger_store.close()


def dpmem(*args: str) -> subprocess.CompletedProcess[str]:
    code, out, err = run_cli(list(args))
    return subprocess.CompletedProcess(["dpmem", *args], code, out, err)


def one_line_error(run: subprocess.CompletedProcess[str], words: str) -> None:
    assert run.returncode == 2, (run.returncode, run.stdout, run.stderr)
    assert run.stderr.count("\n") == 1 and words in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr


def test_restoring_an_older_backup_is_refused_then_an_explicit_recorded_rollback(tmp_path: Path) -> None:
    live = tmp_path / "l.db"
    assert admitted_turns(live, 2) == 2
    assert dpmem("ledger", "backup", str(live), str(tmp_path / "old.db")).returncode == 0
    assert admitted_turns(live, 3) == 1  # the budget admits 3 in all
    # The attack: restoring the older backup would re-grant the spent charges.
    one_line_error(dpmem("ledger", "restore", str(tmp_path / "old.db"), str(live)), "--allow-rollback")
    assert admitted_turns(live, 3) == 0  # nothing was restored: the budget stays spent
    # Copying it back by hand is caught: the store refuses to open it, verify fails.
    manual = tmp_path / "manual.db"
    shutil.copyfile(live, manual)
    shutil.copyfile(f"{live}.hwm", f"{manual}.hwm")
    shutil.copyfile(tmp_path / "old.db", manual)
    with pytest.raises(LedgerStoreError, match="does not reach its high-water mark"):
        SQLiteLedgerStore(manual)
    run = dpmem("ledger", "verify", str(manual))
    assert run.returncode == 1 and "high-water mark" in run.stdout and run.stdout.count("\n") == 1
    # The explicit rollback: restored, recorded, reported by every later verify.
    restored = dpmem("ledger", "restore", str(tmp_path / "old.db"), str(live), "--allow-rollback")
    assert restored.returncode == 0, restored.stderr
    assert "ROLLBACK recorded" in restored.stdout
    assert admitted_turns(live, 3) == 1  # what the operator accepted: the rollback re-grants
    verify = dpmem("ledger", "verify", str(live))
    assert verify.returncode == 0 and "ROLLBACK recorded (1)" in verify.stdout, verify.stdout
    # A backup at (or past) the high-water mark restores without any flag, and no rollback.
    assert dpmem("ledger", "backup", str(live), str(tmp_path / "new.db")).returncode == 0
    again = dpmem("ledger", "restore", str(tmp_path / "new.db"), str(live))
    assert again.returncode == 0 and again.stdout.count("ROLLBACK recorded (1)") == 1, again.stdout


def test_restore_into_a_missing_database_and_refusals(tmp_path: Path) -> None:
    live = tmp_path / "l.db"
    admitted_turns(live, 2)
    assert dpmem("ledger", "backup", str(live), str(tmp_path / "b.db")).returncode == 0
    target = tmp_path / "fresh.db"
    assert dpmem("ledger", "restore", str(tmp_path / "b.db"), str(target)).returncode == 0
    assert verify_sqlite(target).ok and admitted_turns(target, 3) == 1
    one_line_error(dpmem("ledger", "restore", str(live), str(live)), "backup file")
    one_line_error(dpmem("ledger", "restore", f"{live}.hwm", str(tmp_path / "x.db")), "backup file")
    one_line_error(dpmem("ledger", "restore", str(tmp_path / "missing.db"), str(live)), "backup file")
    tampered = tmp_path / "t.db"
    shutil.copyfile(tmp_path / "b.db", tampered)
    raw = sqlite3.connect(tampered)
    raw.execute("UPDATE ledgers SET spent = '0/1'")
    raw.commit()
    raw.close()
    one_line_error(dpmem("ledger", "restore", str(tampered), str(tmp_path / "y.db")), "does not verify")
    assert not (tmp_path / "y.db").exists()


SIDE_NAMES = ["{db}", "{db}-wal", "{db}-shm", "{db}-journal", "{db}.hwm", "{dir}/other.db-wal", "{dir}/x.db-journal"]


@pytest.mark.parametrize("pattern", SIDE_NAMES)
def test_backup_refuses_the_live_database_and_its_side_files(tmp_path: Path, pattern: str) -> None:
    live = tmp_path / "l.db"
    admitted_turns(live, 2)
    holder = SQLiteLedgerStore(live)  # a live process: -wal and -shm exist
    holder.open_session("user", "race", {"diabetes": 2})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    destination = pattern.format(db=live, dir=tmp_path)
    run = dpmem("ledger", "backup", str(live), destination)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert {p.name for p in tmp_path.iterdir() if p.is_file()} == set(before)  # nothing created or deleted
    holder.close()
    assert verify_sqlite(live).ok and admitted_turns(live, 3) == 1  # the live ledger is intact


def test_backup_never_deletes_a_file_it_did_not_create(tmp_path: Path) -> None:
    live = tmp_path / "l.db"
    admitted_turns(live, 2)
    planted = {
        "b.db.partial": b"an operator's file named like the old temporary",
        ".b.db.partial": b"another",
        "b.db.partial-journal": b"and another",
    }
    for name, content in planted.items():
        (tmp_path / name).write_bytes(content)
    assert dpmem("ledger", "backup", str(live), str(tmp_path / "b.db")).returncode == 0
    for name, content in planted.items():
        assert (tmp_path / name).read_bytes() == content
    # A destination named like the source's temporary file (the run deleted the
    # live ledger this way): refused or written beside it, never touching the source.
    for name in ("l.db.partial", f".l.db.{os.getpid()}.partial"):
        dpmem("ledger", "backup", str(live), str(tmp_path / name))
        assert verify_sqlite(live).ok
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial") and p.name not in planted]
    assert sorted(leftovers) == sorted(["l.db.partial", f".l.db.{os.getpid()}.partial"])  # the two backups
    assert admitted_turns(live, 3) == 1


def test_backup_of_a_tampered_ledger_leaves_nothing(tmp_path: Path) -> None:
    live = tmp_path / "l.db"
    admitted_turns(live, 2)
    raw = sqlite3.connect(live)
    raw.execute("UPDATE releases SET view = 'tampered-view'")
    raw.commit()
    raw.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    run = dpmem("ledger", "backup", str(live), str(tmp_path / "b.db"))
    one_line_error(run, "does not verify")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
