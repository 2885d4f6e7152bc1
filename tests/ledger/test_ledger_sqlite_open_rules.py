"""What opening a SQLite ledger file does with its chain genesis, its journal and its stored
checkpoint, each through `SQLiteLedgerStore` on a real file:

- a file chained with another key (or with an unreadable genesis) is refused in one line naming
  the file;
- a database SQLite cannot put in WAL mode (an in-memory one) is refused in one line;
- a stored checkpoint that already covers the chain's head is used as it is: saving the
  checkpoint after such an open commits nothing; one behind the head is replaced by the head's;
- a sealed checkpoint of a forked copy (same database identity and seq, another event) is
  ignored: the file opens, verified from its genesis, and its own head's checkpoint replaces it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.ledger import LedgerStoreError, SQLiteLedgerStore
from dpmem_ref.ledger.anchor import high_water_path
from dpmem_ref.ledger.chain import ENV_KEY, ENV_KEY_FILE, HighWater, key_from_environment
from tests.ledger_fixtures import (
    chain_key_fixture,
    charge_sqlite_once,
    save_sqlite_checkpoint,
    small_sqlite_ledger,
    sqlite_chain_head,
    sqlite_statement,
)

KEY = "sqlite-open-rules-key-0123456789abcdef"
OTHER_KEY = "sqlite-open-rules-other-key-0123456789"
CAPS = {"diabetes": Fraction(10)}

_chain_key = chain_key_fixture(KEY)


def _stored_checkpoint(path: Path) -> HighWater:
    """(seq, mac) of the checkpoint row."""
    [(body,)] = sqlite_statement(path, "SELECT body FROM checkpoint WHERE id = 1")
    stored = json.loads(str(body))
    return HighWater(int(stored["seq"]), str(stored["mac"]))


def _commits_of_save_checkpoint(path: Path) -> int:
    """Open the store, then count the commits its `save_checkpoint()` makes (as another
    connection's PRAGMA data_version sees them: it changes with every commit by another one)."""
    store = SQLiteLedgerStore(path)
    watcher = sqlite3.connect(path)
    try:
        before = watcher.execute("PRAGMA data_version").fetchone()[0]
        store.save_checkpoint()
        after = watcher.execute("PRAGMA data_version").fetchone()[0]
    finally:
        watcher.close()
        store.close()
    return 0 if after == before else 1


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (None, "chained with key id {stored}, but the configured key ({env} / {env_file}) has key id {configured}"),
        ("UPDATE chain SET body = 'not json' WHERE seq = 1", "unreadable chain genesis"),
    ],
    ids=["another key", "an unreadable genesis"],
)
def test_a_file_chained_with_another_key_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tamper: str | None, reason: str
) -> None:
    """One key per database for its lifetime: reopened under another key (or with a genesis that
    names no key) the file is refused in one line that names it and both key ids."""
    path = tmp_path / "l.db"
    small_sqlite_ledger(path, CAPS)
    stored = key_from_environment().key_id
    if tamper is not None:
        sqlite_statement(path, tamper)
    monkeypatch.setenv("DPMEM_LEDGER_KEY", OTHER_KEY)
    configured = key_from_environment().key_id
    assert configured != stored
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path)
    words = reason.format(stored=stored, env=ENV_KEY, env_file=ENV_KEY_FILE, configured=configured)
    assert str(refused.value) == f"ledger database {path}: {words}"


def test_a_database_sqlite_cannot_journal_in_wal_mode_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The WAL journal is required (a commit survives power loss once it returns): SQLite's
    in-memory database answers journal_mode "memory", and the store refuses it in one line."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(":memory:")
    assert str(refused.value) == "ledger database :memory:: could not enable the WAL journal"


def test_a_stored_checkpoint_of_the_head_is_used_and_not_stored_again(tmp_path: Path) -> None:
    """A checkpoint behind the head is replaced, on save_checkpoint, by the head's (one commit);
    after that, an open whose stored checkpoint covers the head verified nothing new, so
    save_checkpoint commits nothing and the row stays as it was."""
    path = tmp_path / "l.db"
    small_sqlite_ledger(path, CAPS)
    assert _stored_checkpoint(path).seq < sqlite_chain_head(path).seq  # stored by the first write: behind the head
    assert _commits_of_save_checkpoint(path) == 1
    assert _stored_checkpoint(path) == sqlite_chain_head(path)
    assert _commits_of_save_checkpoint(path) == 0
    assert _stored_checkpoint(path) == sqlite_chain_head(path)


def test_a_sealed_checkpoint_of_a_forked_copy_is_ignored(tmp_path: Path) -> None:
    """A copy charged differently from its original holds the same seqs with other events: the
    original's checkpoint of its head (sealed for the same identity, same seq, another MAC) put
    into the copy is not on the copy's chain, so the copy opens verified from its genesis and its
    own head's checkpoint replaces the foreign one."""
    original, fork = tmp_path / "a.db", tmp_path / "b.db"
    small_sqlite_ledger(original, CAPS)
    shutil.copyfile(original, fork)
    shutil.copyfile(high_water_path(original), high_water_path(fork))
    charge_sqlite_once(original, CAPS, Fraction(1, 3))
    charge_sqlite_once(fork, CAPS, Fraction(1, 5))
    save_sqlite_checkpoint(original)
    ours, theirs = sqlite_chain_head(original), sqlite_chain_head(fork)
    assert ours.seq == theirs.seq and ours.mac != theirs.mac
    assert _stored_checkpoint(original) == sqlite_chain_head(original)
    [(body,)] = sqlite_statement(original, "SELECT body FROM checkpoint WHERE id = 1")
    sqlite_statement(fork, "INSERT OR REPLACE INTO checkpoint (id, body) VALUES (1, ?)", (body,))
    assert _commits_of_save_checkpoint(fork) == 1
    assert _stored_checkpoint(fork) == sqlite_chain_head(fork)
    store = SQLiteLedgerStore(fork)
    try:
        assert store.user_ledgers("u") == [("i", {"diabetes": Fraction(2, 3) + Fraction(1, 5)}, CAPS)]
    finally:
        store.close()
