"""`dpmem ledger reanchor postgresql://...`: what it records, where it puts the anchor, how it refuses.

The PostgreSQL twin of the reanchor section of test_ledger_recovery_records.py, on a real
server (tests/postgres_server.py), with the anchor in its default place (the `dpmem_anchor`
row) and under `DPMEM_LEDGER_ANCHOR_DIR` (a file). Every call passes its chain key
explicitly (`KEY`) while the environment holds another one (the public development key):
the check before, the event, the anchor and the final verification must all use the key
given. The `reanchor` event records what the anchor was, in exact words: missing, at seq N,
or refused (the reason, after the anchor's own name). Refusals are one line naming the
database (its password never shown).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import psycopg
import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest
from dpmem_ref.ledger.anchor import anchor_text, read_anchor
from dpmem_ref.ledger.chain import ChainKey, HighWater, reanchor_body
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from dpmem_ref.ledger.postgres.schema import read_anchor_row
from dpmem_ref.ledger.postgres.verify import reanchor_postgres, verify_postgres
from tests.ledger_fixtures import public_key_in_the_test_folder_fixture

KEY = ChainKey(secret=b"postgres-reanchor-key-0123456789", keyed=True)
ANOTHER_KEY = ChainKey(secret=b"another-key-0123456789abcdef", keyed=True)
ANCHOR_DIR = "anchors"  # relative to the test's folder, so lines name it whole
PLACEMENTS = ["row", "anchor dir"]


_public_key = public_key_in_the_test_folder_fixture()


class Database:
    """One ledger namespace on the server, charged under KEY, and plain SQL access to it."""

    def __init__(self, placement: str, monkeypatch: pytest.MonkeyPatch) -> None:
        if placement == "anchor dir":
            Path(ANCHOR_DIR).mkdir()
            monkeypatch.setenv("DPMEM_LEDGER_ANCHOR_DIR", ANCHOR_DIR)
        self.placement = placement
        self.url = postgres_server.new_database()
        self.name = postgres_server.shown(self.url)  # the redacted URL
        ledger_store = PostgresLedgerStore(self.url, key=KEY)
        try:
            opened = ledger_store.open_session("user", "chat", {"diabetes": Fraction(4)})
            for n in range(2):
                opened.charge_and_record(
                    ReleaseRequest(
                        f"{n}a", f"{n}b", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1, 3)
                    )
                )
            self.identity = ledger_store.identity
        finally:
            ledger_store.close()

    def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as connection:
            cursor = connection.execute(statement, params)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    def head(self) -> HighWater:
        seq, mac = self.sql("SELECT seq, mac FROM dpmem_chain ORDER BY seq DESC LIMIT 1")[0]
        return HighWater(int(seq), str(mac))

    def last_event(self) -> tuple[Any, ...]:
        return self.sql("SELECT seq, kind, body FROM dpmem_chain ORDER BY seq DESC LIMIT 1")[0]

    @property
    def anchor_file(self) -> Path:
        return Path(ANCHOR_DIR) / f"{self.identity}.anchor"

    def anchor(self) -> HighWater | None:
        """The anchor as the store reads it, under KEY."""
        if self.placement == "anchor dir":
            return read_anchor(self.anchor_file, KEY, self.identity)
        with psycopg.connect(self.url, autocommit=True) as connection:
            return read_anchor_row(connection, self.name, KEY, self.identity)

    def set_anchor(self, text: str | None) -> None:
        """The attacker's (or the accident's) anchor: `text` in place of it, or none at all."""
        if self.placement == "anchor dir":
            if text is None:
                self.anchor_file.unlink()
            else:
                self.anchor_file.write_text(text)
        else:
            self.sql("DELETE FROM dpmem_anchor")
            if text is not None:
                self.sql("INSERT INTO dpmem_anchor (id, body) VALUES (1, %s)", (text,))

    def anchor_words(self) -> str:
        """How a refusal names the anchor."""
        return str(self.anchor_file) if self.placement == "anchor dir" else f"{self.name} dpmem_anchor"


@pytest.fixture(params=PLACEMENTS)
def database(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Database:
    return Database(request.param, monkeypatch)


def test_reanchoring_records_a_missing_anchor_and_anchors_the_new_head(database: Database) -> None:
    before = database.head()
    database.set_anchor(None)
    report = reanchor_postgres(database.url, key=KEY)
    now = database.head()
    assert database.last_event() == (before.seq + 1, "reanchor", reanchor_body("missing", before))
    assert now.seq == before.seq + 1 and database.anchor() == now
    assert report.ok and report.chain is not None and report.chain.key_id == KEY.key_id and report.high_water == now
    assert report.line().endswith(
        f"ROLLBACK recorded (1): seq {now.seq}: re-anchored at chain seq {before.seq} (the anchor was missing))"
    )


@pytest.mark.parametrize("anchor", ["sealed with another key", "another database's"])
def test_reanchoring_records_why_the_anchor_was_refused_and_replaces_it(database: Database, anchor: str) -> None:
    before = database.head()
    other = "0" * 32
    if anchor == "sealed with another key":
        database.set_anchor(anchor_text(ANOTHER_KEY, database.identity, "live", before))
        why = "its seal does not match the key (edited, or sealed with another key)"
    else:
        database.set_anchor(anchor_text(KEY, other, "live", before))
        why = f"belongs to another database (id {other[:16]}, this one is {database.identity[:16]})"
    report = reanchor_postgres(database.url, key=KEY)
    assert database.last_event() == (before.seq + 1, "reanchor", reanchor_body(f"refused ({why})", before))
    assert report.ok and database.anchor() == database.head() == report.high_water


def test_reanchoring_a_database_behind_its_anchor_records_the_anchor_and_lowers_it(database: Database) -> None:
    """The anchor names an event the chain does not hold (the database put back from an older
    copy): it is recorded, and moved down to the new head."""
    before = database.head()
    ahead = HighWater(before.seq + 5, "ab" * 32)
    database.set_anchor(anchor_text(KEY, database.identity, "live", ahead))
    report = reanchor_postgres(database.url, key=KEY)
    assert database.last_event() == (before.seq + 1, "reanchor", reanchor_body(f"at seq {ahead.seq}", before))
    assert report.ok and database.anchor() == database.head() == HighWater(before.seq + 1, database.head().mac)


def test_an_anchor_path_holding_a_folder_is_recorded_in_its_own_words_then_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The event commits before the anchor file is written: the chain keeps the whole reason
    (which itself holds ': '); once the folder is gone a second re-anchor records the anchor
    as missing and writes it."""
    database = Database("anchor dir", monkeypatch)
    before = database.head()
    database.set_anchor(None)
    database.anchor_file.mkdir()
    with pytest.raises(LedgerStoreError) as refused:
        reanchor_postgres(database.url, key=KEY)
    assert str(refused.value) == f"anchor {database.anchor_file}: cannot be written"
    why = f"refused (cannot be read (expected a regular anchor file, found a directory: {database.anchor_file}))"
    assert database.last_event() == (before.seq + 1, "reanchor", reanchor_body(why, before))
    recorded = database.head()
    database.anchor_file.rmdir()
    assert reanchor_postgres(database.url, key=KEY).ok
    assert database.last_event() == (recorded.seq + 1, "reanchor", reanchor_body("missing", recorded))
    assert database.anchor() == database.head()


def test_reanchor_refusals_are_one_line_naming_the_database(database: Database) -> None:
    with pytest.raises(LedgerStoreError) as reached:
        reanchor_postgres(database.url, key=KEY)
    assert (
        str(reached.value) == f"ledger database {database.name}: its anchor is intact and reached; nothing to re-anchor"
    )
    database.set_anchor(None)
    database.sql("UPDATE dpmem_ledgers SET spent = '0/1'")
    problem = verify_postgres(database.url, KEY, high_water=False).problem
    assert problem is not None
    with pytest.raises(LedgerStoreError) as tampered:
        reanchor_postgres(database.url, key=KEY)
    assert str(tampered.value) == f"ledger database {database.name} does not verify, not re-anchored: {problem}"


def test_a_reanchor_the_server_refuses_to_commit_is_one_line_naming_the_database(database: Database) -> None:
    """A trigger planted on the chain table refuses the `reanchor` row (the chain still
    verifies: a trigger rewrites nothing): the event is not committed, the anchor stays
    missing, and the driver's error is one line of words."""
    before = database.head()
    database.set_anchor(None)
    database.sql(
        "CREATE FUNCTION planted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'planted'; END $$"
    )
    database.sql("CREATE TRIGGER planted BEFORE INSERT ON dpmem_chain FOR EACH ROW EXECUTE FUNCTION planted()")
    with pytest.raises(LedgerStoreError) as refused:
        reanchor_postgres(database.url, key=KEY)
    assert str(refused.value) == f"ledger database {database.name}: PostgreSQL error (RaiseException P0001)"
    assert postgres_server.PASSWORD not in str(refused.value)
    assert database.head() == before and database.anchor() is None
