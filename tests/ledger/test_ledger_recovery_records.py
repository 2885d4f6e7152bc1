"""What `restore`, `reanchor` and `migrate` leave as evidence, and how they refuse.

Every call passes its chain key explicitly (`KEY`), while the environment holds another
one (the public development key): each check, each event and the final verification must
use the key given. The evidence is pinned exactly: the `rollback` event records the
reference it went back from (the live anchor, else the live chain head) and the head it went
back to; the `reanchor` event records what the anchor was; the anchor then sits at the new
head. Refusals are one line naming what and where. Paths are relative to the test's folder
(the working directory), so the lines are compared whole.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_ledger_binding import ROOT, legacy_ledger

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest, SQLiteLedgerStore
from dpmem_ref.ledger.anchor import anchor_text, read_anchor
from dpmem_ref.ledger.backup import LedgerReport, backup_sqlite, verify_sqlite
from dpmem_ref.ledger.chain import ChainKey, HighWater, reanchor_body, rollback_body
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.ledger.migrate import Routes
from dpmem_ref.ledger.restore import migrate_sqlite, reanchor_sqlite, restore_sqlite
from dpmem_ref.ledger.sqlite.schema import identity
from tests.ledger_fixtures import public_key_in_the_test_folder_fixture
from tests.ledger_fixtures import sqlite_statement as sql

KEY = ChainKey(secret=b"recovery-records-key-0123456789", keyed=True)
FAILS_EVERY_CHAIN_INSERT = (
    "CREATE TRIGGER planted BEFORE INSERT ON chain BEGIN SELECT RAISE(ABORT, 'planted trigger'); END"
)


_public_key = public_key_in_the_test_folder_fixture()


def charged(path: str, interaction: str, charges: int = 2) -> HighWater:
    """Open a session and commit `charges` charges of 1/3 under KEY; the new chain head."""
    ledger_store = SQLiteLedgerStore(path, key=KEY)
    try:
        opened = ledger_store.open_session("user", interaction, {"diabetes": Fraction(4)})
        tag = interaction.encode().hex()  # release and turn ids are hex
        for n in range(charges):
            opened.charge_and_record(
                ReleaseRequest(f"{tag}{n}a", f"{tag}{n}b", 0, "food", "low", "balanced",
                               frozenset({"diabetes"}), Fraction(1, 3))
            )  # fmt: skip
    finally:
        ledger_store.close()
    return head(path)


def head(path: str) -> HighWater:
    seq, mac = sql(path, "SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1")[0]
    return HighWater(int(str(seq)), str(mac))


def last_event(path: str) -> tuple[object, ...]:
    return sql(path, "SELECT seq, kind, body FROM chain ORDER BY seq DESC LIMIT 1")[0]


def anchor_of(path: str) -> HighWater | None:
    connection = sqlite3.connect(path)
    try:
        database = identity(connection)
    finally:
        connection.close()
    return read_anchor(Path(f"{path}.hwm"), KEY, database)


def copy_back_by_hand(backup: str, live: str) -> None:
    """The backup's pages copied over the live file (the live anchor stays where it was)."""
    source, target = sqlite3.connect(backup), sqlite3.connect(live)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def intact(live: str, at: HighWater) -> None:
    assert head(live) == at and anchor_of(live) == at
    assert verify_sqlite(live, KEY).ok
    assert not [p.name for p in Path().iterdir() if ".partial" in p.name]  # nothing of ours left behind


# ------------------------------------------------------------------------------ restore


def test_an_explicit_rollback_records_the_head_it_left_and_moves_the_anchor_to_the_restored_head() -> None:
    charged("l.db", "first")
    backup_sqlite("l.db", "old.db", key=KEY)
    old = head("old.db")
    left = charged("l.db", "second")
    report = restore_sqlite("old.db", "l.db", allow_rollback=True, key=KEY)
    now = head("l.db")
    assert last_event("l.db") == (old.seq + 1, "rollback", rollback_body(left.seq, left.mac, old.seq, old.mac))
    assert now.seq == old.seq + 1 and anchor_of("l.db") == now
    assert report.ok and report.chain is not None and report.chain.key_id == KEY.key_id and report.high_water == now
    assert report.line().endswith(
        f"high-water mark seq {now.seq} reached; ROLLBACK recorded (1): "
        f"seq {now.seq}: restored back to chain seq {old.seq} from seq {left.seq})"
    )
    assert sql("l.db", "SELECT count(*) FROM releases") == [(2,)]  # the backup's rows
    # A backup that reaches the anchor goes in place without a flag and without an event.
    backup_sqlite("l.db", "new.db", key=KEY)
    fresh = restore_sqlite("new.db", "fresh.db", key=KEY)
    assert fresh.ok and fresh.high_water == now and anchor_of("fresh.db") == now and head("fresh.db") == now
    intact("l.db", now)


def test_a_backup_is_measured_against_the_live_anchor_not_the_chain_copied_back_under_it() -> None:
    charged("l.db", "first")
    backup_sqlite("l.db", "old.db", key=KEY)
    old = head("old.db")
    mark = charged("l.db", "second")
    copy_back_by_hand("old.db", "l.db")  # the live chain now ends where the backup's does
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("old.db", "l.db", key=KEY)
    assert str(refused.value) == (
        f"backup old.db is older than the high-water mark of l.db (chain seq {mark.seq}): restoring it would "
        "re-grant every charge committed since; pass --allow-rollback to restore it and record the rollback"
    )
    assert anchor_of("l.db") == mark
    restore_sqlite("old.db", "l.db", allow_rollback=True, key=KEY)
    assert last_event("l.db") == (old.seq + 1, "rollback", rollback_body(mark.seq, mark.mac, old.seq, old.mac))
    intact("l.db", head("l.db"))


def test_a_live_database_without_its_anchor_is_measured_by_its_chain_head() -> None:
    charged("l.db", "first")
    backup_sqlite("l.db", "old.db", key=KEY)
    old = head("old.db")
    live = charged("l.db", "second")
    Path("l.db.hwm").unlink()
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("old.db", "l.db", key=KEY)
    assert str(refused.value).startswith(
        f"backup old.db is older than the high-water mark of l.db (chain seq {live.seq}): restoring it would "
    )
    assert head("l.db") == live
    restore_sqlite("old.db", "l.db", allow_rollback=True, key=KEY)
    assert last_event("l.db") == (old.seq + 1, "rollback", rollback_body(live.seq, live.mac, old.seq, old.mac))
    intact("l.db", head("l.db"))


def test_the_report_line_names_the_bound_interface_and_every_rollback_the_chain_records() -> None:
    fingerprint = "0123456789abcdef" * 4
    bound = SQLiteLedgerStore("l.db", key=KEY)
    try:
        bound.open_session("user", "first", {"diabetes": Fraction(4)}, fingerprint)
    finally:
        bound.close()
    charged("l.db", "first")
    backup_sqlite("l.db", "old.db", key=KEY)
    first_from = charged("l.db", "second")
    restore_sqlite("old.db", "l.db", allow_rollback=True, key=KEY)
    first = head("l.db")
    backup_sqlite("l.db", "older.db", key=KEY)
    second_from = charged("l.db", "third")
    report = restore_sqlite("older.db", "l.db", allow_rollback=True, key=KEY)
    second = head("l.db")
    assert report.line() == (
        f"ledger l.db: ok (schema 2, fingerprint 0123456789ab, 1 sessions, 2 releases, 0 turns, L <= B on every "
        f"ledger, charge log matches the ledgers, chain of {second.seq} events verified (key id {KEY.key_id}), "
        f"high-water mark seq {second.seq} reached; ROLLBACK recorded (2): "
        f"seq {first.seq}: restored back to chain seq {first.seq - 1} from seq {first_from.seq}; "
        f"seq {second.seq}: restored back to chain seq {second.seq - 1} from seq {second_from.seq})"
    )


def test_a_report_without_chain_evidence_ends_at_the_ledger_checks() -> None:
    report = LedgerReport("l.db", None, 3, 5, 7)
    assert report.line() == (
        "ledger l.db: ok (schema 2, no interface bound yet, 3 sessions, 5 releases, 7 turns, L <= B on every "
        "ledger, charge log matches the ledgers)"
    )


@pytest.mark.parametrize("name", ["b.db-wal", "b.db-shm", "b.db-journal", "b.db.hwm", "l.db"])
def test_a_backup_named_like_the_live_database_or_a_side_file_is_refused_in_one_line(name: str) -> None:
    live = charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    if name != "l.db":
        Path(name).write_bytes(Path("b.db").read_bytes())  # a verified backup under a side file's name
    with pytest.raises(InputError) as refused:
        restore_sqlite(name, "fresh.db" if name != "l.db" else "l.db", key=KEY)
    assert str(refused.value) == (
        f"backup file: expected a backup file apart from the live database and its side files, found {name!r}"
    )
    assert not Path("fresh.db").exists()
    intact("l.db", live)


def test_restore_refuses_a_missing_backup_and_a_destination_it_cannot_create_in_one_line() -> None:
    charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    before = sorted(p.name for p in Path().iterdir())
    with pytest.raises(InputError) as missing:
        restore_sqlite("missing.db", "l.db", key=KEY)
    assert str(missing.value) == "backup file: expected an existing SQLite ledger file, found 'missing.db'"
    with pytest.raises(InputError) as nowhere:
        restore_sqlite("b.db", "no-such-folder/l.db", key=KEY)
    assert str(nowhere.value) == "ledger database: expected a path in an existing folder, found 'no-such-folder/l.db'"
    with pytest.raises(InputError) as side:
        restore_sqlite("b.db", "new.db-journal", key=KEY)
    assert str(side.value) == (
        "ledger database: expected a new file apart from the live database and its -wal/-shm/-journal/.hwm, "
        "found 'new.db-journal'"
    )
    assert sorted(p.name for p in Path().iterdir()) == before  # nothing created


def test_restore_writes_its_temporary_copy_beside_the_database_not_in_the_system_temp_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    live = charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    monkeypatch.setattr(tempfile, "tempdir", str(Path("no-such-temp-folder").resolve()))
    assert restore_sqlite("b.db", "fresh.db", key=KEY).ok
    assert restore_sqlite("b.db", "l.db", key=KEY).ok
    intact("fresh.db", live)
    intact("l.db", live)


@pytest.mark.parametrize(
    "planted",
    [
        FAILS_EVERY_CHAIN_INSERT,
        "CREATE TRIGGER planted AFTER INSERT ON chain WHEN NEW.kind = 'rollback' "
        "BEGIN UPDATE ledgers SET spent = '0/1'; END",  # would re-grant the budget as the rollback commits
        "CREATE VIEW planted AS SELECT * FROM ledgers",
    ],
    ids=["trigger-aborting-chain-inserts", "trigger-re-granting-on-rollback", "view"],
)
def test_a_backup_carrying_a_trigger_or_view_is_refused_before_anything_is_copied(planted: str) -> None:
    """Whoever can write a backup file can plant SQL that would run inside every later commit of
    the live database it is restored into; dpmem's schema has no trigger and no view, so a file
    with one does not verify and is never restored (nor opened)."""
    charged("l.db", "first")
    backup_sqlite("l.db", "old.db", key=KEY)
    live = charged("l.db", "second")
    sql("old.db", planted)
    kind = "view" if "VIEW" in planted else "trigger"
    problem = f"foreign schema ({kind} planted: dpmem's schema has none)"
    assert verify_sqlite("old.db", KEY, high_water=False).problem == problem
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("old.db", "l.db", allow_rollback=True, key=KEY)
    assert str(refused.value) == f"backup old.db does not verify: {problem}"
    intact("l.db", live)
    with pytest.raises(LedgerStoreError) as opened:
        SQLiteLedgerStore("old.db", key=KEY)
    assert str(opened.value) == f"ledger database old.db: {problem}"


def test_a_backup_the_live_database_cannot_take_is_refused_naming_the_live_database() -> None:
    """SQLite copies into a WAL database only pages of its own size: a backup vacuumed to
    another page size is refused as the copy into the live file starts, the live file intact."""
    live = charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    connection = sqlite3.connect("b.db")
    connection.execute("PRAGMA page_size = 8192")
    connection.execute("VACUUM")
    connection.close()
    assert verify_sqlite("b.db", KEY).ok
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("b.db", "l.db", key=KEY)
    assert str(refused.value).startswith("ledger database l.db: ") and "\n" not in str(refused.value)
    intact("l.db", live)


def test_a_live_database_that_is_no_sqlite_file_is_refused_naming_it() -> None:
    charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    Path("junk.db").write_bytes(b"not an SQLite file " * 400)
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("b.db", "junk.db", key=KEY)
    assert str(refused.value) == "ledger database junk.db: not an SQLite database"
    assert Path("junk.db").read_bytes() == b"not an SQLite file " * 400


def edited_after_its_verification(monkeypatch: pytest.MonkeyPatch, backup: str, statement: str) -> None:
    """Another process writes the backup between restore's verification of it and its
    snapshot (restore's own verify, spied on: the backup is edited as it returns)."""
    import dpmem_ref.ledger.restore as restore

    edited: list[str] = []

    def verify_then_edit(path: str | Path, *args: Any, **kwargs: Any) -> LedgerReport:
        report = verify_sqlite(path, *args, **kwargs)
        if Path(path) == Path(backup) and not edited:
            sql(backup, statement)
            edited.append(backup)
        return report

    monkeypatch.setattr(restore, "verify_sqlite", verify_then_edit)


def test_a_backup_edited_after_its_verification_is_caught_in_the_restored_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """What goes in place is the verified copy, not the file verified a moment before."""
    live = charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    edited_after_its_verification(monkeypatch, "b.db", "UPDATE ledgers SET spent = '0/1'")
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("b.db", "l.db", key=KEY)
    problem = verify_sqlite("b.db", KEY, high_water=False).problem
    assert problem is not None and str(refused.value) == f"restored copy of b.db does not verify: {problem}"
    intact("l.db", live)


def test_a_restored_copy_sqlite_cannot_finish_is_refused_naming_the_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy is a temporary file beside the database it is to become, named after it; the
    line names that file, and nothing is left behind (no database, no copy)."""
    charged("l.db", "first")
    backup_sqlite("l.db", "b.db", key=KEY)
    edited_after_its_verification(monkeypatch, "b.db", "DROP TABLE chain")
    with pytest.raises(LedgerStoreError) as refused:
        restore_sqlite("b.db", "fresh.db", key=KEY)
    copy = rf"{re.escape(str(Path().resolve()))}/\.fresh\.db\.[^/]+\.partial"
    assert re.fullmatch(rf"ledger database {copy}: foreign schema \(not a dpmem ledger\)", str(refused.value))
    assert not Path("fresh.db").exists() and not [p.name for p in Path().iterdir() if ".partial" in p.name]


# ------------------------------------------------------------------------------ reanchor


def test_reanchoring_records_a_missing_anchor_and_anchors_the_new_head() -> None:
    before = charged("l.db", "first")
    Path("l.db.hwm").unlink()
    report = reanchor_sqlite("l.db", key=KEY)
    now = head("l.db")
    assert last_event("l.db") == (before.seq + 1, "reanchor", reanchor_body("missing", before))
    assert now.seq == before.seq + 1 and anchor_of("l.db") == now
    assert report.ok and report.chain is not None and report.chain.key_id == KEY.key_id and report.high_water == now
    assert report.line().endswith(
        f"ROLLBACK recorded (1): seq {now.seq}: re-anchored at chain seq {before.seq} (the anchor was missing))"
    )


@pytest.mark.parametrize(
    ("anchor", "words"),
    [
        (b"not an anchor", "unreadable"),
        ("another key", "its seal does not match the key (edited, or sealed with another key)"),
    ],
)
def test_reanchoring_records_why_the_anchor_was_refused_and_replaces_it(anchor: bytes | str, words: str) -> None:
    before = charged("l.db", "first")
    if isinstance(anchor, str):
        other = ChainKey(secret=b"another-key-0123456789abcdef", keyed=True)
        database = str(sql("l.db", "SELECT body FROM chain WHERE seq = 1")[0][0])
        anchor = anchor_text(other, database, "live", before).encode()
    Path("l.db.hwm").write_bytes(anchor)
    report = reanchor_sqlite("l.db", key=KEY)
    assert last_event("l.db") == (before.seq + 1, "reanchor", reanchor_body(f"refused ({words})", before))
    assert report.ok and anchor_of("l.db") == head("l.db")


def test_reanchoring_a_database_behind_its_anchor_records_the_anchor_and_lowers_it() -> None:
    charged("l.db", "first")
    backup_sqlite("l.db", "old.db", key=KEY)
    old = head("old.db")
    mark = charged("l.db", "second")
    copy_back_by_hand("old.db", "l.db")
    report = reanchor_sqlite("l.db", key=KEY)
    assert last_event("l.db") == (old.seq + 1, "reanchor", reanchor_body(f"at seq {mark.seq}", old))
    assert report.ok and anchor_of("l.db") == head("l.db") == HighWater(old.seq + 1, head("l.db").mac)


def test_an_anchor_path_holding_a_folder_is_recorded_in_its_own_words_then_refused() -> None:
    """The event commits before the anchor is written: the chain keeps the reason; once the
    folder is gone a second re-anchor records the anchor as missing and writes it."""
    before = charged("l.db", "first")
    Path("l.db.hwm").unlink()
    Path("l.db.hwm").mkdir()
    with pytest.raises(LedgerStoreError) as refused:
        reanchor_sqlite("l.db", key=KEY)
    assert str(refused.value) == "anchor l.db.hwm: cannot be written"
    why = "refused (cannot be read (expected a regular anchor file, found a directory: l.db.hwm))"
    assert last_event("l.db") == (before.seq + 1, "reanchor", reanchor_body(why, before))
    recorded = head("l.db")
    Path("l.db.hwm").rmdir()
    assert reanchor_sqlite("l.db", key=KEY).ok
    assert last_event("l.db") == (recorded.seq + 1, "reanchor", reanchor_body("missing", recorded))
    assert anchor_of("l.db") == head("l.db")


def test_reanchor_refusals_are_one_line_naming_the_file() -> None:
    charged("l.db", "first")
    with pytest.raises(LedgerStoreError) as reached:
        reanchor_sqlite("l.db", key=KEY)
    assert str(reached.value) == "ledger database l.db: its anchor l.db.hwm is intact and reached; nothing to re-anchor"
    with pytest.raises(InputError) as missing:
        reanchor_sqlite("missing.db", key=KEY)
    assert str(missing.value) == "ledger file: expected an existing SQLite ledger file, found 'missing.db'"
    Path("l.db.hwm").unlink()
    sql("l.db", "UPDATE ledgers SET spent = '0/1'")
    problem = verify_sqlite("l.db", KEY, high_water=False).problem
    assert problem is not None
    with pytest.raises(LedgerStoreError) as tampered:
        reanchor_sqlite("l.db", key=KEY)
    assert str(tampered.value) == f"ledger database l.db does not verify, not re-anchored: {problem}"


def test_a_reanchor_sqlite_refuses_to_commit_is_one_line_naming_the_file() -> None:
    """An index planted on the chain whose expression fails on the `reanchor` row (the chain
    still verifies: an index rewrites nothing): the event is not committed, the anchor stays
    as it was (missing)."""
    before = charged("l.db", "first")
    Path("l.db.hwm").unlink()
    sql("l.db", "CREATE INDEX planted ON chain (json_extract(body, '$[')) WHERE kind = 'reanchor'")
    with pytest.raises(LedgerStoreError) as refused:
        reanchor_sqlite("l.db", key=KEY)
    assert str(refused.value) == "ledger database l.db: SQLite error (OperationalError)"
    assert head("l.db") == before and not Path("l.db.hwm").exists()


# ------------------------------------------------------------------------------ migrate


FIGURE = load_interface_file(ROOT / "examples" / "figure2.toml").interface


def test_migration_chains_with_the_key_given_and_replaces_a_stale_anchor() -> None:
    legacy_ledger(Path("l.db"))
    Path("l.db.hwm").write_bytes(b"left by an earlier file of this name")
    report = migrate_sqlite("l.db", interface_fingerprint(FIGURE), key=KEY, routes=Routes.of(FIGURE))
    assert report.ok and report.chain is not None and report.chain.key_id == KEY.key_id and report.releases == 2
    assert anchor_of("l.db") == head("l.db") == report.high_water


def test_migration_refusals_are_one_line_naming_the_file() -> None:
    fingerprint, routes = interface_fingerprint(FIGURE), Routes.of(FIGURE)
    with pytest.raises(InputError) as missing:
        migrate_sqlite("missing.db", fingerprint, key=KEY, routes=routes)
    assert str(missing.value) == "ledger file: expected an existing SQLite ledger file, found 'missing.db'"
    Path("junk.db").write_bytes(b"not an SQLite file " * 400)
    with pytest.raises(LedgerStoreError) as junk:
        migrate_sqlite("junk.db", fingerprint, key=KEY, routes=routes)
    assert str(junk.value) == "ledger database junk.db: not an SQLite database"
    legacy_ledger(Path("bad.db"), spent="1/3")
    with pytest.raises(LedgerStoreError) as inconsistent:
        migrate_sqlite("bad.db", fingerprint, key=KEY, routes=routes)
    assert str(inconsistent.value) == (
        "ledger database bad.db: not migrated, its rows are inconsistent: "
        "a ledger differs from the sum of its logged charges"
    )


def test_a_legacy_turn_record_with_bytes_that_are_no_utf8_refuses_the_migration_with_nothing_written() -> None:
    """A corrupted byte in a legacy file's turn record: the migration hashes the record's bytes
    as stored (never a crash on them), then replays what it would commit; the row the chain
    cannot vouch for refuses it in one line naming the row, and the file is as it was."""
    legacy_ledger(Path("l.db"))
    record = b'{"admitted":[],"charges":[],"control":null,"query":"affordable-dinner","response":"caf\xe9","views":[]}'
    insert = "INSERT INTO turns (user, interaction, turn_id, record) VALUES ('user', 'chat', 't9', CAST(? AS TEXT))"
    sql("l.db", insert, (record,))
    before = Path("l.db").read_bytes()
    with pytest.raises(LedgerStoreError) as refused:
        migrate_sqlite("l.db", interface_fingerprint(FIGURE), key=KEY, routes=Routes.of(FIGURE))
    assert (
        str(refused.value)
        == "ledger database l.db: not migrated, the migrated rows do not verify: turns seq 1: unreadable text"
    )
    assert Path("l.db").read_bytes() == before
    assert not Path("l.db.hwm").exists()
