"""The rules of `checkpoint.Verified.advance`, `checkpoint.verify_on_open` and
`checkpoint.LiveVerification.check`, on one small SQLite ledger (docs/durability.md,
"Verification on open and before serving").

- a new chain event may only name release and turn seqs after the newest ones already
  verified (a seq equal to it is a replay), refused in one line naming the table and both seqs;
- a release or turn row missing from the rows read is refused naming its table and seq;
- a sealed checkpoint the chain holds is where the open starts (and says whether it already
  covers the head); one the chain does not hold is ignored (the walk starts at the genesis);
- a live check compares the digest of the rows served to a scope, not only its ledgers.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.ledger import LedgerStoreError, SQLiteLedgerStore
from dpmem_ref.ledger.chain import key_from_environment
from dpmem_ref.ledger.checkpoint import NO_ROWS, LiveVerification, TailReader, Verified, served_rows
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.sqlite import schema as sqlite_schema
from tests.ledger_fixtures import (
    chain_key_fixture,
    charge_sqlite_once,
    save_sqlite_checkpoint,
    small_sqlite_ledger,
    sqlite_statement,
)

KEY = "checkpoint-advance-rules-key-0123456789"
CAPS = {"diabetes": Fraction(2)}
FINGERPRINT = "f" * 64  # small_sqlite_ledger bound to it: chain events 1..6 (genesis, bind, open, 2 charges, turn)
SCOPE = SessionKey("u", "i")

_chain_key = chain_key_fixture(KEY)


def _refusal(where: str, problem: str) -> str:
    return (
        f"ledger database {where}: refused, a row to be served or charged differs from its verified chain: "
        f"{problem}; nothing was served or charged (dpmem ledger verify {where} names the row; "
        "put the newest verified backup back with dpmem ledger restore)"
    )


@pytest.fixture
def connection(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    small_sqlite_ledger(tmp_path / "l.db", CAPS, FINGERPRINT)
    opened = sqlite3.connect(tmp_path / "l.db")
    yield opened
    opened.close()


def _live(connection: sqlite3.Connection, verified: Verified) -> tuple[LiveVerification, TailReader]:
    live = LiveVerification(key_from_environment(), "l.db", verified)
    return live, lambda seq, release, turn: sqlite_schema.read_tail(connection, seq, release, turn)


@pytest.mark.parametrize(
    ("newest", "problem"),
    [
        ((1, 0), "releases: a new event names seq 1, not after the verified seq 1"),  # equal: a replay
        ((2, 0), "releases: a new event names seq 1, not after the verified seq 2"),
        ((0, 1), "turns: a new event names seq 1, not after the verified seq 1"),
    ],
    ids=["release-equal", "release-below", "turn-equal"],
)
def test_a_new_event_naming_a_seq_not_after_the_verified_one_is_refused(
    connection: sqlite3.Connection, newest: tuple[int, int], problem: str
) -> None:
    """A fold refuses a chain whose new events name a release (turn) seq at or below the newest
    verified one (`<=`: an equal seq is refused too), naming the table, the lowest seq the new
    events name and the verified seq; the store then refuses from then on (fail closed)."""
    verified = Verified.genesis()
    verified.newest = newest  # what a checkpoint covering those rows holds
    live, read_tail = _live(connection, verified)
    for _ in range(2):
        with pytest.raises(LedgerStoreError) as refused:
            live.check(read_tail, [])
        assert str(refused.value) == _refusal("l.db", problem)


def test_new_events_after_the_verified_seqs_are_folded(connection: sqlite3.Connection) -> None:
    """The contrast: seqs after the verified ones (here: none verified) fold, and the counts and
    newest seqs move to the rows the chain committed."""
    verified = Verified.genesis()
    live, read_tail = _live(connection, verified)
    live.check(read_tail, [])
    assert (verified.seq, verified.counts, verified.newest) == (6, (2, 1), (2, 1))


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("DELETE FROM releases WHERE seq = 2", "releases seq 2: deleted (its chain event remains)"),
        ("DELETE FROM turns WHERE seq = 1", "turns seq 1: deleted (its chain event remains)"),
        (
            "INSERT INTO releases (seq, user, interaction, release_id, turn_id, slot_index, slot, view, admitted,"
            " charge_set, epsilon) SELECT 9, user, interaction, 'ff', turn_id, slot_index, slot, view, admitted,"
            " charge_set, epsilon FROM releases WHERE seq = 1",
            "releases seq 9: not in the chain (inserted)",
        ),
        (
            "INSERT INTO turns (seq, user, interaction, turn_id, record) SELECT 9, user, interaction, 'ff', record"
            " FROM turns WHERE seq = 1",
            "turns seq 9: not in the chain (inserted)",
        ),
    ],
    ids=["release-deleted", "turn-deleted", "release-inserted", "turn-inserted"],
)
def test_an_open_refuses_a_row_deleted_or_inserted_naming_its_table_and_seq(
    tmp_path: Path, statement: str, problem: str
) -> None:
    """The rows newer than the checkpoint are compared with the chain by table: a deleted or an
    inserted release or turn row refuses the open in one line naming `releases` or `turns`."""
    path = tmp_path / "l.db"
    small_sqlite_ledger(path, CAPS, FINGERPRINT)
    sqlite_statement(path, statement)
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path)
    assert str(refused.value) == (
        f"ledger database {path}: refused, verification on open failed: {problem} "
        f"(dpmem ledger verify {path} names the row; put the newest verified backup back with dpmem ledger restore)"
    )


def test_a_live_check_compares_the_rows_served_to_each_scope(connection: sqlite3.Connection) -> None:
    """Before a load serves rows, the digest of the rows it serves is compared with the chain's:
    a release row missing from what is served is refused, naming the scope and both counts."""
    _, releases, turns = sqlite_schema.read_tail(connection, 0, 0, 0)
    live, read_tail = _live(connection, Verified.genesis())
    ledgers = {"diabetes": Fraction(2, 3)}
    turn_rows = [row[2:] for row in turns]
    every = served_rows(NO_ROWS, SCOPE, [row[2:] for row in releases], turn_rows)
    live.check(read_tail, [(SCOPE, ledgers, CAPS, every)])
    one_missing = served_rows(NO_ROWS, SCOPE, [releases[0][2:]], turn_rows)
    with pytest.raises(LedgerStoreError) as refused:
        live.check(read_tail, [(SCOPE, ledgers, CAPS, one_missing)])
    problem = "scope (u, i): its release rows (1 served, 2 committed) differ from their chain events"
    assert str(refused.value) == _refusal("l.db", f"{problem} (edited, inserted or deleted)")


def _open(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Verified, bool, list[tuple[int, ...]]]:
    """`verify_on_open` over the file, with the (chain seq, release seq, turn seq) it read after."""
    reads: list[tuple[int, ...]] = []
    read_tail = sqlite_schema.read_tail

    def read(opened: sqlite3.Connection, *after: int) -> object:
        reads.append(after)
        return read_tail(opened, *after)

    monkeypatch.setattr(sqlite_schema, "read_tail", read)
    connection = sqlite3.connect(path)
    try:
        verified, covered = sqlite_schema.verify_on_open(
            connection, key_from_environment(), sqlite_schema.identity(connection)
        )
    finally:
        connection.close()
    monkeypatch.setattr(sqlite_schema, "read_tail", read_tail)
    return verified, covered, reads


def _walked(path: Path, monkeypatch: pytest.MonkeyPatch) -> Verified:
    """What a walk from the genesis reaches (the checkpoint row deleted from a copy)."""
    copy = path.with_name("walked.db")
    shutil.copyfile(path, copy)
    sqlite_statement(copy, "DELETE FROM checkpoint")
    verified, covered, reads = _open(copy, monkeypatch)
    assert reads == [(0, 0, 0)] and not covered
    return verified


def test_an_open_walks_on_from_a_held_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint sealed for this database that the chain holds is the start: the open reads the
    chain and rows after its (event, release, turn) seqs only, reaches what a whole walk reaches,
    and says the checkpoint does not cover the head yet."""
    path = tmp_path / "l.db"
    small_sqlite_ledger(path, CAPS, FINGERPRINT)
    charge_sqlite_once(
        path, CAPS, fingerprint=FINGERPRINT
    )  # checkpoint at event 6 (releases 2, turns 1); the head is event 7
    verified, covered, reads = _open(path, monkeypatch)
    assert reads == [(6, 2, 1)]
    assert not covered
    assert (verified.seq, verified.counts, verified.newest) == (7, (3, 1), (3, 1))
    assert verified == _walked(path, monkeypatch)


def test_an_open_at_a_checkpoint_of_the_head_says_it_is_covered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint of the chain's head: the open reads nothing after it and reports it covered
    (so nothing is stored again)."""
    path = tmp_path / "l.db"
    small_sqlite_ledger(path, CAPS, FINGERPRINT)
    save_sqlite_checkpoint(path)
    verified, covered, reads = _open(path, monkeypatch)
    assert reads == [(6, 2, 1)]
    assert covered is True
    assert verified == _walked(path, monkeypatch)


def test_a_sealed_checkpoint_the_chain_does_not_hold_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older copy of the database given a newer checkpoint of the same database (sealed by the
    key for its identity, but of an event the copy's chain does not hold): the checkpoint is
    ignored, the open walks from the genesis and reaches the copy's own head."""
    path, older = tmp_path / "l.db", tmp_path / "older.db"
    small_sqlite_ledger(path, CAPS, FINGERPRINT)
    shutil.copyfile(path, older)  # head: event 6
    charge_sqlite_once(path, CAPS, fingerprint=FINGERPRINT)
    save_sqlite_checkpoint(path)  # checkpoint of event 7
    [(newer,)] = sqlite_statement(path, "SELECT body FROM checkpoint WHERE id = 1")
    sqlite_statement(older, "UPDATE checkpoint SET body = ? WHERE id = 1", (newer,))
    verified, covered, reads = _open(older, monkeypatch)
    assert reads == [(0, 0, 0)]
    assert not covered
    assert (verified.seq, verified.counts, verified.newest) == (6, (2, 1), (2, 1))
