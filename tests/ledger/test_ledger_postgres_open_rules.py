"""What opening a PostgreSQL ledger store checks and writes, each rule on the real test server.

- the anchor: a chain past its genesis (two events already) without one is refused; an anchor
  row that cannot be read, or whose event the chain no longer holds, is refused in one line
  naming the database and the anchor; under `DPMEM_LEDGER_ANCHOR_DIR` each commit moves the
  anchor file to the new head;
- the verification on open: an edited ledger row is refused in one line; the open starts from
  the stored checkpoint (a release row older than it, edited with the counts kept, is left to
  the load, which refuses it naming the database); the first write after an open stores the
  checkpoint of what that open verified, once, and an open whose checkpoint already covers the
  head stores none;
- the session rows: a cap that is not exact 'p/q' text is refused by its column's name.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.anchor import read_anchor
from dpmem_ref.ledger.chain import ChainKey, HighWater
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from tests.ledger_fixtures import charge_request, public_key_in_the_test_folder_fixture

KEY = ChainKey(secret=b"postgres-open-rules-key-01234567", keyed=True)
CAPS = {"diabetes": Fraction(4)}

_public_key = public_key_in_the_test_folder_fixture()


sql = postgres_server.admin_execute  # one statement as a raw writer would run it: its rows


def head(database_url: str) -> HighWater:
    seq, mac = sql(database_url, "SELECT seq, mac FROM dpmem_chain ORDER BY seq DESC LIMIT 1")[0]
    return HighWater(int(seq), str(mac))


def checkpoint(database_url: str) -> tuple[int, str]:
    """The stored checkpoint's seq, and the row version (xmin) that wrote it."""
    ((body, version),) = sql(database_url, "SELECT body, xmin::text FROM dpmem_checkpoint")
    return int(json.loads(body)["seq"]), str(version)


def refusal(database_url: str) -> str:
    with pytest.raises(LedgerStoreError) as refused:
        PostgresLedgerStore(database_url, key=KEY)
    return str(refused.value)


def written(charges: int) -> str:
    """A closed database with one session ("u", "i") and `charges` charges: its URL."""
    database_url = postgres_server.new_database()
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    session = ledger_store.open_session("u", "i", CAPS)
    for _ in range(charges):
        session.charge_and_record(charge_request())
    ledger_store.close()
    return database_url


def test_a_chain_of_genesis_and_one_event_without_its_anchor_is_refused() -> None:
    """Past the genesis (seq 2 already), a missing anchor row is refused, naming the row; nothing is written."""
    database_url = written(charges=0)
    assert head(database_url).seq == 2
    sql(database_url, "DELETE FROM dpmem_anchor")
    shown = postgres_server.shown(database_url)
    assert refusal(database_url) == (
        f"ledger database {shown}: its anchor ({shown} dpmem_anchor) is missing, so a truncated or older copy "
        "would go unnoticed; if this is the live database, re-anchor it (recorded in its chain): "
        "dpmem ledger reanchor URL"
    )
    assert sql(database_url, "SELECT COUNT(*) FROM dpmem_anchor") == [(0,)]


def test_a_genesis_only_chain_without_its_anchor_is_anchored_at_the_genesis() -> None:
    """A chain of its genesis alone gets its anchor on open (nothing can have been truncated)."""
    database_url = postgres_server.new_database()
    PostgresLedgerStore(database_url, key=KEY).close()
    sql(database_url, "DELETE FROM dpmem_anchor")
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    ledger_store.close()
    assert (head(database_url).seq, sql(database_url, "SELECT COUNT(*) FROM dpmem_anchor")) == (1, [(1,)])


def test_an_unreadable_anchor_row_is_refused_naming_the_row_and_the_recovery() -> None:
    """An anchor row that is not a sealed anchor: one line, the row named, then the reanchor command."""
    database_url = written(charges=1)
    sql(database_url, "UPDATE dpmem_anchor SET body = 'garbage'")
    shown = postgres_server.shown(database_url)
    assert refusal(database_url) == (
        f"ledger database {shown}: refused, anchor {shown} dpmem_anchor: unreadable; "
        "a live database whose anchor was replaced: dpmem ledger reanchor URL"
    )


def test_a_chain_that_no_longer_holds_the_anchors_event_is_refused_as_rewound() -> None:
    """The anchor's event (seq and MAC) must be in the chain: else rewound, naming the anchor and its seq."""
    database_url = written(charges=1)
    mark = head(database_url)
    assert mark.seq == 3
    sql(database_url, "UPDATE dpmem_chain SET mac = 'x' || mac WHERE seq = 3")
    shown = postgres_server.shown(database_url)
    assert refusal(database_url) == (
        f"ledger database {shown}: its chain does not reach its high-water mark (the event of {shown} dpmem_anchor, "
        "seq 3): rewound, truncated or forked; restore the newest backup of the server"
    )


def test_under_an_anchor_dir_each_commit_moves_the_anchor_file_to_the_new_head(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With DPMEM_LEDGER_ANCHOR_DIR, the anchor file follows the head after every commit."""
    Path("anchors").mkdir()
    monkeypatch.setenv("DPMEM_LEDGER_ANCHOR_DIR", "anchors")
    database_url = postgres_server.new_database()
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    assert ledger_store.anchor_file == Path("anchors") / f"{ledger_store.identity}.anchor"
    session = ledger_store.open_session("u", "i", CAPS)
    assert read_anchor(ledger_store.anchor_file, KEY, ledger_store.identity) == head(database_url)
    session.charge_and_record(charge_request())
    assert head(database_url).seq == 3
    assert read_anchor(ledger_store.anchor_file, KEY, ledger_store.identity) == head(database_url)
    ledger_store.close()


def test_an_edited_ledger_row_is_refused_on_open_in_one_line() -> None:
    """Verification on open: a ledger row that differs from its chain refuses the open, naming the row."""
    database_url = written(charges=1)
    sql(database_url, "UPDATE dpmem_ledgers SET spent = '0/1'")
    assert refusal(database_url) == (
        f"ledger database {postgres_server.shown(database_url)}: refused, verification on open failed: "
        "ledgers row (u, i, diabetes): differs from the chain (L_a = sum of committed charges, B_a as opened) "
        "(dpmem ledger verify URL names the row)"
    )


def test_the_open_starts_from_the_checkpoint_and_the_load_refuses_an_older_edited_row() -> None:
    """The open reads only release rows newer than its sealed checkpoint (O(new events)): one older,
    edited with the counts kept, opens, and the load that would serve it refuses it naming the database."""
    database_url = written(charges=2)
    ledger_store = PostgresLedgerStore(database_url, key=KEY)  # verifies to the head: checkpoint stored next
    ledger_store.open_session("u", "i", CAPS).charge_and_record(charge_request())
    ledger_store.close()
    assert checkpoint(database_url)[0] == 4  # genesis, open, two charges
    sql(database_url, "UPDATE dpmem_releases SET view = 'forged' WHERE seq = 1")
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    session = ledger_store.open_session("u", "i", CAPS)
    with pytest.raises(LedgerStoreError) as refused:
        session.load()
    shown = postgres_server.shown(database_url)
    assert str(refused.value) == (
        f"ledger database {shown}: refused, a row to be served or charged differs from its verified chain: "
        "scope (u, i): its release rows (3 served, 3 committed) differ from their chain events "
        f"(edited, inserted or deleted); nothing was served or charged (dpmem ledger verify {shown} names the row; "
        "put the newest verified backup back with dpmem ledger restore)"
    )
    ledger_store.close()


def test_the_first_write_after_an_open_stores_the_checkpoint_of_what_it_verified() -> None:
    """An open that wrote nothing (an existing session) still stores its checkpoint with its first event."""
    database_url = written(charges=1)
    assert checkpoint(database_url)[0] == 1  # the first open verified the genesis alone
    opened_at = head(database_url)
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    session = ledger_store.open_session("u", "i", CAPS)  # exists: no event, nothing committed
    assert head(database_url) == opened_at
    session.charge_and_record(charge_request())
    assert checkpoint(database_url)[0] == opened_at.seq == 3
    ledger_store.close()


def test_the_checkpoint_is_stored_once_per_open() -> None:
    """Only the first commit after an open writes the checkpoint row; later ones leave it as it is."""
    database_url = postgres_server.new_database()
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    session = ledger_store.open_session("u", "i", CAPS)
    stored = checkpoint(database_url)
    for _ in range(2):
        session.charge_and_record(charge_request())
    assert head(database_url).seq == 4
    assert checkpoint(database_url) == stored
    ledger_store.close()


def test_an_open_whose_checkpoint_covers_the_head_stores_no_checkpoint() -> None:
    """A checkpoint already at the head (here: a database put back to the state its checkpoint
    sealed, anchor included) is not written again by the next commit."""
    database_url = written(charges=1)
    anchor_at_3 = sql(database_url, "SELECT body FROM dpmem_anchor")[0][0]
    ledger_store = PostgresLedgerStore(database_url, key=KEY)  # verifies seq 3
    ledger_store.open_session("v", "j", CAPS)  # stores the checkpoint at seq 3, event 4
    ledger_store.close()
    assert (checkpoint(database_url)[0], head(database_url).seq) == (3, 4)
    sql(database_url, "DELETE FROM dpmem_chain WHERE seq = 4")
    sql(database_url, "DELETE FROM dpmem_ledgers WHERE user_name = 'v'")
    sql(database_url, "UPDATE dpmem_anchor SET body = %s", (anchor_at_3,))
    stored = checkpoint(database_url)
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    ledger_store.open_session("u", "i", CAPS).charge_and_record(charge_request())
    ledger_store.close()
    assert head(database_url).seq == 4
    assert checkpoint(database_url) == stored


def test_a_cap_that_is_not_p_q_text_is_refused_by_its_column() -> None:
    """Opening a session reads its stored caps as exact 'p/q' text: anything else names ledgers.cap."""
    database_url = written(charges=0)
    ledger_store = PostgresLedgerStore(database_url, key=KEY)
    sql(database_url, "UPDATE dpmem_ledgers SET cap = 'four'")
    with pytest.raises(LedgerStoreError) as refused:
        ledger_store.open_session("u", "i", CAPS)
    assert str(refused.value) == "ledgers.cap: expected exact non-negative 'p/q' text"
    ledger_store.close()


def test_a_database_chained_with_another_key_is_refused_naming_both_key_ids() -> None:
    """One key per database for its lifetime: another key is refused on open, naming the database."""
    database_url = written(charges=0)
    another = ChainKey(secret=b"another-open-rules-key-012345678", keyed=True)
    with pytest.raises(LedgerStoreError) as refused:
        PostgresLedgerStore(database_url, key=another)
    assert str(refused.value) == (
        f"ledger database {postgres_server.shown(database_url)}: chained with key id {KEY.key_id}, "
        f"but the configured key (DPMEM_LEDGER_KEY / DPMEM_LEDGER_KEY_FILE) has key id {another.key_id}"
    )
