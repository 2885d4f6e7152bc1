"""What `backup_sqlite` returns, refuses and leaves behind.

A backup is the verified copy at its destination with `DEST.hwm` (role backup) at the copy's
chain head; everything else is refused in one line naming the field, what was expected and
the path, and leaves the folder as it was: no destination, no anchor, no temporary copy and
no journal of it. Paths are relative to the test's folder (the working directory), so the
lines are compared whole.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from test_ledger_recovery_records import KEY, charged, head

import dpmem_ref.ledger.backup as backup_module
from dpmem_ref.cli import main
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.exits import EXIT_BAD_INPUT
from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.anchor import BACKUP, read_anchor
from dpmem_ref.ledger.backup import backup_sqlite, verify_sqlite
from tests.ledger_fixtures import public_key_in_the_test_folder_fixture

NOT_YET = "a path that does not exist yet (never overwritten)"
APART = "a new file apart from the live database and its -wal/-shm/-journal/.hwm"


_public_key = public_key_in_the_test_folder_fixture()


def listing() -> list[str]:
    """Every name in the folder, hidden ones (the temporary copy) included."""
    return sorted(os.listdir("."))


def test_a_backup_is_the_verified_copy_at_its_destination_anchored_at_its_chain_head() -> None:
    mark = charged("l.db", "first")
    report = backup_sqlite("l.db", "b.db", key=KEY)
    assert report.path == "b.db" and report.high_water == mark == head("b.db")
    assert report == verify_sqlite("b.db", KEY)  # what a later check of the backup and its anchor finds
    assert report.line() == (
        f"ledger b.db: ok (schema 2, no interface bound yet, 1 sessions, 2 releases, 0 turns, L <= B on every "
        f"ledger, charge log matches the ledgers, chain of {mark.seq} events verified (key id {KEY.key_id}), "
        f"high-water mark seq {mark.seq} reached)"
    )
    assert report.chain is not None
    assert read_anchor(Path("b.db.hwm"), KEY, report.chain.identity or "", (BACKUP,)) == mark
    assert listing() == ["b.db", "b.db.hwm", "l.db", "l.db.hwm"]  # nothing of ours left behind


def test_a_source_that_is_missing_or_no_file_is_refused_in_one_line() -> None:
    Path("folder.db").mkdir()
    with pytest.raises(InputError) as missing:
        backup_sqlite("missing.db", "b.db", key=KEY)
    assert str(missing.value) == "ledger file: expected an existing SQLite ledger file, found 'missing.db'"
    with pytest.raises(InputError) as folder:
        backup_sqlite("folder.db", "b.db", key=KEY)
    assert str(folder.value) == "ledger file: expected a regular file (not a directory or device), found 'folder.db'"
    assert listing() == ["folder.db"]


def test_a_source_sqlite_cannot_read_is_refused_naming_it() -> None:
    Path("junk.db").write_bytes(b"not an SQLite file " * 400)
    with pytest.raises(LedgerStoreError) as refused:
        backup_sqlite("junk.db", "b.db", key=KEY)
    assert str(refused.value) == "ledger database junk.db: not an SQLite database"
    assert listing() == ["junk.db"]


def _file(name: str) -> None:
    Path(name).write_text("keep me")


def _dangling_link(name: str) -> None:
    os.symlink("nowhere.db", name)


@pytest.mark.parametrize(
    ("planted_at", "planted", "destination", "line"),
    [
        ("b.db", _file, "b.db", f"backup destination: expected {NOT_YET}, found 'b.db'"),
        ("b.db", _dangling_link, "b.db", f"backup destination: expected {NOT_YET}, found 'b.db'"),
        # The anchor the backup would carry is checked before anything is copied.
        ("b.db.hwm", _file, "b.db", f"backup destination: expected {NOT_YET}, found 'b.db.hwm'"),
        ("b.db.hwm", _dangling_link, "b.db", f"backup destination: expected {NOT_YET}, found 'b.db.hwm'"),
        (None, None, "no-such-folder/b.db", "backup destination: expected a path in an existing folder, found 'no-such-folder/b.db'"),
        (None, None, "l.db", f"backup destination: expected {NOT_YET}, found 'l.db'"),
        (None, None, "l.db-wal", f"backup destination: expected {APART}, found 'l.db-wal'"),
        (None, None, "b.db-journal", f"backup destination: expected {APART}, found 'b.db-journal'"),
    ],
    ids=["file", "dangling-link", "anchor-file", "anchor-dangling-link", "no-folder", "live", "live-wal",
         "side-file-name"],
)  # fmt: skip
def test_a_destination_taken_or_named_like_a_side_file_is_refused_and_nothing_is_written(
    planted_at: str | None, planted: Callable[[str], None] | None, destination: str, line: str
) -> None:
    charged("l.db", "first")
    if planted_at is not None and planted is not None:
        planted(planted_at)
    before = listing()
    with pytest.raises(InputError) as refused:
        backup_sqlite("l.db", destination, key=KEY)
    assert str(refused.value) == line
    assert listing() == before  # no backup, no anchor, no temporary copy, no link's target
    if planted is _file:
        assert Path(str(planted_at)).read_text() == "keep me"


def test_a_destination_the_live_databases_wal_link_points_to_is_refused_before_it_exists() -> None:
    """SQLite would take that file for the live database's WAL: it is refused although it does
    not exist yet, and nothing is created there."""
    charged("l.db", "first")
    os.symlink("elsewhere.db", "l.db-wal")
    with pytest.raises(InputError) as refused:
        backup_sqlite("l.db", "elsewhere.db", key=KEY)
    assert str(refused.value) == f"backup destination: expected {APART}, found 'elsewhere.db'"
    assert listing() == ["l.db", "l.db-wal", "l.db.hwm"]


def meanwhile(monkeypatch: pytest.MonkeyPatch, action: Callable[[Path], object]) -> None:
    """Run `action` on the temporary copy once it has verified, before it is linked into place
    (what another process could do in that moment)."""
    verified = backup_module.verify_sqlite

    def verify_then_act(path: str | Path, *args: object, **kwargs: object) -> object:
        report = verified(path, *args, **kwargs)  # type: ignore[arg-type]
        action(Path(path))
        return report

    monkeypatch.setattr(backup_module, "verify_sqlite", verify_then_act)


def test_a_destination_created_while_the_copy_is_made_is_kept_and_the_backup_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    charged("l.db", "first")
    meanwhile(monkeypatch, lambda _: Path("b.db").write_text("written meanwhile"))
    with pytest.raises(InputError) as refused:
        backup_sqlite("l.db", "b.db", key=KEY)
    assert str(refused.value) == f"backup destination: expected {NOT_YET}, found 'b.db'"
    assert Path("b.db").read_text() == "written meanwhile"
    assert listing() == ["b.db", "l.db", "l.db.hwm"]  # no anchor, no temporary copy


def test_a_copy_that_turns_unreadable_before_it_is_linked_is_refused_naming_the_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    charged("l.db", "first")
    meanwhile(monkeypatch, lambda copy: copy.write_bytes(b"overwritten " * 400))
    with pytest.raises(LedgerStoreError) as refused:
        backup_sqlite("l.db", "b.db", key=KEY)
    assert str(refused.value) == "ledger database l.db: not an SQLite database"
    assert listing() == ["l.db", "l.db.hwm"]


def test_the_journal_beside_the_temporary_copy_is_removed_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection writing into the temporary copy makes SQLite create its -journal beside it;
    the backup removes both (and only both), and the backup holds none of that writer's change."""
    mark = charged("l.db", "first")
    writers: list[sqlite3.Connection] = []

    def write_into(copy: Path) -> None:
        writer = sqlite3.connect(copy, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("CREATE TABLE scratch (y)")  # uncommitted: in the journal, never in the copy
        writers.append(writer)
        assert Path(f"{copy}-journal").exists()

    meanwhile(monkeypatch, write_into)
    try:
        report = backup_sqlite("l.db", "b.db", key=KEY)
        assert listing() == ["b.db", "b.db.hwm", "l.db", "l.db.hwm"]
    finally:
        for writer in writers:
            writer.close()
    assert report.ok and report.high_water == mark and verify_sqlite("b.db", KEY).ok


def test_a_backup_from_a_removed_working_folder_names_the_unusable_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A relative destination cannot be resolved once the working folder is gone: that is
    reported as the path that cannot be used, never as a clash with the live database."""
    charged("l.db", "first")
    Path("gone").mkdir()
    monkeypatch.chdir("gone")
    Path(tmp_path / "gone").rmdir()
    assert main(["ledger", "backup", str(tmp_path / "l.db"), "b.db"]) == EXIT_BAD_INPUT
    unusable = f"a path given on the command line cannot be used: {os.strerror(errno.ENOENT)}"
    assert capsys.readouterr().err == f"dpmem: error: {unusable}\n"
    assert sorted(os.listdir(tmp_path)) == ["l.db", "l.db.hwm"]
