"""A row is served, and a charge admitted, only as the chain committed it (docs/durability.md,
"Verification on open and before serving").

The attacker writes the database (no key). Verification on open covers the rows newer than the
last checkpoint; these tests attack what it does not re-read: rows *older* than the checkpoint,
edited in a way that keeps the row counts (relabelled, swapped, moved to another scope, a
column changed), and every row, ledger and event edited *while a store is open*. Each is
refused on the load or charge that would use it, before any release, on SQLite and
PostgreSQL; a store whose chain fails to fold refuses from then on (fail closed).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ledger_anchor import KEY, Ledger
from test_ledger_concurrency import ONE_SLOT

from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.ledger import LedgerStoreError, open_ledger_store
from dpmem_ref.ledger.chain import key_from_environment
from dpmem_ref.ledger.facts import ReleaseRequest
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession
from tests.ledger_fixtures import chain_key_fixture

_chain_key = chain_key_fixture(KEY)

OLDEST_RELEASE = "(SELECT MIN(seq) FROM releases)"
OLDEST_TURN = "(SELECT MIN(seq) FROM turns)"
# Edits of one committed row that keep every table's row count (what verification on open
# compares for rows older than its checkpoint). SQL in SQLite spelling; `Ledger.execute`
# renames the tables for PostgreSQL.
ROW_EDITS = {
    "release view relabelled": f"UPDATE releases SET view = 'low-glycemic-forged' WHERE seq = {OLDEST_RELEASE}",
    "release slot relabelled": f"UPDATE releases SET slot = 'drink' WHERE seq = {OLDEST_RELEASE}",
    "release admission flipped": f"UPDATE releases SET admitted = NOT admitted WHERE seq = {OLDEST_RELEASE}",
    "release eps lowered": f"UPDATE releases SET epsilon = '1/3' WHERE seq = {OLDEST_RELEASE}",
    "release charge set emptied": f"UPDATE releases SET charge_set = '[]' WHERE seq = {OLDEST_RELEASE}",
    "release id changed": f"UPDATE releases SET release_id = 'forged-id' WHERE seq = {OLDEST_RELEASE}",
    "release index changed": f"UPDATE releases SET slot_index = slot_index + 1 WHERE seq = {OLDEST_RELEASE}",
    "release moved to another scope": f"UPDATE releases SET interaction = 'other' WHERE seq = {OLDEST_RELEASE}",
    "turn record edited": f"UPDATE turns SET record = replace(record, 'dinner', 'lunch') WHERE seq = {OLDEST_TURN}",
    "turn id changed": f"UPDATE turns SET turn_id = 'forged-turn' WHERE seq = {OLDEST_TURN}",
    "turn moved to another user": f"UPDATE turns SET {{user}} = 'mallory' WHERE seq = {OLDEST_TURN}",
}


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    if request.param == "postgres":
        pytest.importorskip("psycopg")
    return Ledger(request.param, tmp_path, monkeypatch)


def _edit(ledger: Ledger, statement: str) -> None:
    ledger.execute(statement.replace("{user}", "user_name" if ledger.postgres else "user"))


def _refused_before_any_release(ledger: Ledger, turns: int = 1) -> str:
    before = ledger.released()
    with pytest.raises(LedgerStoreError) as refused:
        ledger.admitted(turns)
    assert ledger.released() == before, "a release was committed from an edited ledger"
    message = str(refused.value)
    assert "\n" not in message and "private" not in message, message
    return message


def _session(ledger_store: object) -> DurableSession:
    loaded = interface_from_dict(ONE_SLOT)
    return DurableSession.open(
        loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(1),  # type: ignore[arg-type]
        turn_deadline_s=None,
    )  # fmt: skip


# ------------------------------------------------------------------ rows older than the checkpoint


@pytest.mark.parametrize("edit", sorted(ROW_EDITS))
def test_an_edit_older_than_the_checkpoint_that_keeps_the_counts_is_never_served(ledger: Ledger, edit: str) -> None:
    ledger.admitted(2)
    ledger.admitted(1)  # this open verified the first two turns and stored its checkpoint past them
    assert ledger.execute("SELECT COUNT(*) FROM checkpoint") == [(1,)]
    counts = [ledger.execute(f"SELECT COUNT(*) FROM {t}") for t in ("releases", "turns")]
    _edit(ledger, ROW_EDITS[edit])
    assert [ledger.execute(f"SELECT COUNT(*) FROM {t}") for t in ("releases", "turns")] == counts
    message = _refused_before_any_release(ledger)
    assert "differ" in message or "not in the chain" in message, message


def test_two_older_rows_swapped_are_never_served(ledger: Ledger) -> None:
    ledger.admitted(3)
    ledger.admitted(1)
    first, second = (row[0] for row in ledger.execute("SELECT seq FROM releases ORDER BY seq LIMIT 2"))
    ids = dict(ledger.execute("SELECT seq, release_id FROM releases"))
    ledger.execute("UPDATE releases SET release_id = 'swap' WHERE seq = ?", (first,))
    ledger.execute("UPDATE releases SET release_id = ? WHERE seq = ?", (ids[first], second))
    ledger.execute("UPDATE releases SET release_id = ? WHERE seq = ?", (ids[second], first))
    _refused_before_any_release(ledger)


# ------------------------------------------------------------------ edits while a store is open


LIVE_EDITS = {
    "ledger lowered": "UPDATE ledgers SET spent = '0/1'",
    "cap raised": "UPDATE ledgers SET cap = '100/1'",
    "newest release relabelled": "UPDATE releases SET view = 'forged' WHERE seq = (SELECT MAX(seq) FROM releases)",
    "oldest release relabelled": f"UPDATE releases SET view = 'forged' WHERE seq = {OLDEST_RELEASE}",
    "newest turn edited": "UPDATE turns SET record = replace(record, 'dinner', 'lunch') "
    "WHERE seq = (SELECT MAX(seq) FROM turns)",
    "newest chain event edited": "UPDATE chain SET body = replace(body, 'race', 'rice') "
    "WHERE seq = (SELECT MAX(seq) FROM chain)",
    "a release row deleted": "DELETE FROM releases WHERE seq = (SELECT MAX(seq) FROM releases)",
}


@pytest.mark.parametrize("edit", sorted(LIVE_EDITS))
def test_an_edit_while_a_store_is_open_is_refused_at_its_next_turn(ledger: Ledger, edit: str) -> None:
    ledger_store = open_ledger_store(ledger.url)
    try:
        session = _session(ledger_store)
        assert sum(session.run_turn("dinner").record.admitted) == 1
        before = ledger.released()
        ledger.execute(LIVE_EDITS[edit])
        with pytest.raises(LedgerStoreError) as refused:
            session.run_turn("dinner")
        assert ledger.released() == before - (edit == "a release row deleted")
        assert "\n" not in str(refused.value)
    finally:
        ledger_store.close()  # type: ignore[attr-defined]


def test_a_ledger_lowered_between_load_and_charge_admits_nothing(ledger: Ledger) -> None:
    """The charge re-reads the ledgers under the write lock: they are checked there too, so a
    reset between a load and its charge is refused inside the transaction (C5 would have
    admitted it against the edited row)."""
    caps = {"diabetes": Fraction(2)}
    ledger_store = open_ledger_store(ledger.url)
    try:
        session = ledger_store.open_session("u", "chat", caps)
        for n in range(2):
            session.charge_and_record(
                ReleaseRequest(f"a{n}", f"b{n}", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1))
            )
        session.load()
        ledger.execute("UPDATE ledgers SET spent = '0/1'")
        with pytest.raises(LedgerStoreError, match="differs from its verified chain"):
            session.charge_and_record(
                ReleaseRequest("a2", "b2", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1))
            )
        assert ledger.released() == 2
    finally:
        ledger_store.close()  # type: ignore[attr-defined]


def test_a_store_whose_chain_fails_to_fold_refuses_every_scope_from_then_on(ledger: Ledger) -> None:
    ledger_store = open_ledger_store(ledger.url)
    try:
        caps = {"diabetes": Fraction(2)}
        mine, other = ledger_store.open_session("u", "a", caps), ledger_store.open_session("v", "b", caps)
        mine.load(), other.load()
        mine.charge_and_record(
            ReleaseRequest("a0", "b0", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1))
        )  # an event no load has folded yet
        ((seq, mac),) = ledger.execute("SELECT seq, mac FROM chain WHERE seq = (SELECT MAX(seq) FROM chain)")
        ledger.execute("UPDATE chain SET mac = 'forged' WHERE seq = ?", (seq,))
        for session in (other, mine, other):
            with pytest.raises(LedgerStoreError, match="MAC does not match"):
                session.load()
        ledger.execute("UPDATE chain SET mac = ? WHERE seq = ?", (mac, seq))  # put back: still refused
        with pytest.raises(LedgerStoreError, match="MAC does not match"):
            other.load()
    finally:
        ledger_store.close()  # type: ignore[attr-defined]
    ledger.execute("UPDATE chain SET mac = 'forged' WHERE seq = ?", (seq,))
    with pytest.raises(LedgerStoreError):
        open_ledger_store(ledger.url)


def _live_refusal(path: Path, problem: str) -> str:
    return (
        f"ledger database {path}: refused, a row to be served or charged differs from its verified chain: "
        f"{problem}; nothing was served or charged (dpmem ledger verify {path} names the row; "
        "put the newest verified backup back with dpmem ledger restore)"
    )


def test_sqlite_an_edited_ledger_is_refused_in_one_line_naming_the_row_and_the_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger("sqlite", tmp_path, monkeypatch)
    ledger_store = open_ledger_store(ledger.url)
    try:
        session = ledger_store.open_session("u", "chat", {"diabetes": Fraction(2)})
        session.load()
        ledger.execute("UPDATE ledgers SET spent = '1/1'")
        with pytest.raises(LedgerStoreError) as refused:
            session.load()
    finally:
        ledger_store.close()  # type: ignore[attr-defined]
    problem = "scope (u, chat): its ledgers differ from the chain (L_a = sum of committed charges, B_a as opened)"
    assert str(refused.value) == _live_refusal(ledger.path, problem)


def test_sqlite_an_event_that_verifies_but_cannot_be_read_is_refused_as_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A charge event whose MAC holds (written with the key: a writer's bug) but whose body
    cannot be folded (its scopes a number) is named as an unreadable row, not by the Python
    error it raised, and the store refuses from then on."""
    ledger = Ledger("sqlite", tmp_path, monkeypatch)
    ledger_store = open_ledger_store(ledger.url)
    try:
        session = ledger_store.open_session("u", "chat", {"diabetes": Fraction(2)})
        session.load()
        session.charge_and_record(
            ReleaseRequest("a0", "b0", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1))
        )  # an event no load has folded yet
        ((seq, kind, body),) = ledger.execute("SELECT seq, kind, body FROM chain ORDER BY seq DESC LIMIT 1")
        ((previous,),) = ledger.execute("SELECT mac FROM chain WHERE seq = ?", (seq - 1,))
        assert kind == "charge"
        unfoldable = json.dumps({**json.loads(body), "scopes": 1})
        mac = key_from_environment().mac(seq, kind, previous, unfoldable)
        ledger.execute("UPDATE chain SET body = ?, mac = ? WHERE seq = ?", (unfoldable, mac, seq))
        for _ in range(2):
            with pytest.raises(LedgerStoreError) as refused:
                session.load()
            assert str(refused.value) == _live_refusal(ledger.path, "unreadable row (corrupted values)")
    finally:
        ledger_store.close()  # type: ignore[attr-defined]


# ------------------------------------------------------------------ any single cell, generated


COLUMNS = {
    "releases": ("user", "interaction", "release_id", "turn_id", "slot_index", "slot", "view", "admitted",
                 "charge_set", "epsilon"),
    "turns": ("user", "interaction", "turn_id", "record"),
}  # fmt: skip


def _changed(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    text = str(value)
    return text[:-1] + ("x" if text[-1:] != "x" else "y") if text else "x"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=20, deadline=None)
@given(table=st.sampled_from(sorted(COLUMNS)), pick=st.integers(0, 10**6), turns=st.integers(1, 3))
def test_sqlite_any_single_cell_of_an_older_row_changed_is_never_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, pick: int, turns: int
) -> None:
    folder = tmp_path / f"c{abs(hash((table, pick, turns)))}"
    folder.mkdir()
    ledger = Ledger("sqlite", folder, monkeypatch)
    ledger.admitted(turns)
    ledger.admitted(1)  # the checkpoint now covers the first `turns` turns
    rows = ledger.execute(f"SELECT seq FROM {table} ORDER BY seq")  # noqa: S608
    seq = rows[pick % max(1, len(rows) - 1)][0]  # a row older than the checkpoint
    column = COLUMNS[table][pick % len(COLUMNS[table])]
    (value,) = ledger.execute(f"SELECT {column} FROM {table} WHERE seq = ?", (seq,))[0]  # noqa: S608
    ledger.execute(f"UPDATE {table} SET {column} = ? WHERE seq = ?", (_changed(value), seq))  # noqa: S608
    _refused_before_any_release(ledger)


# ------------------------------------------------------------------ meta rows and the owner's listing


@pytest.mark.parametrize("edit", ["changed", "deleted", "inserted"])
def test_an_epoch_row_edited_while_a_store_is_open_is_never_read(ledger: Ledger, edit: str) -> None:
    """The runtime's budget epoch lives in meta rows the chain commits (rebind events): a
    fresh epoch written by hand would grant fresh scopes, so a read compares it first."""
    ledger_store = open_ledger_store(ledger.url)
    try:
        ledger_store.open_session("u", "chat", {"diabetes": Fraction(2)}, fingerprint="a" * 64)
        ledger_store.rebind("a" * 64, "b" * 64, {"runtime.epoch": "1"})
        assert ledger_store.read_meta("runtime.epoch") == "1"
        statement = {
            "changed": "UPDATE meta SET value = '2' WHERE key = 'runtime.epoch'",
            "deleted": "DELETE FROM meta WHERE key = 'runtime.epoch'",
            "inserted": "INSERT INTO meta (key, value) VALUES ('runtime.epochs', '[]')",
        }[edit]
        ledger.execute(statement)
        name = "runtime.epochs" if edit == "inserted" else "runtime.epoch"
        with pytest.raises(LedgerStoreError, match=f"meta row {name}: differs from the chain"):
            ledger_store.read_meta(name)
    finally:
        ledger_store.close()  # type: ignore[attr-defined]


def test_the_owners_listing_never_shows_an_edited_ledger(ledger: Ledger) -> None:
    ledger_store = open_ledger_store(ledger.url)
    try:
        session = ledger_store.open_session("u", "chat", {"diabetes": Fraction(2)})
        session.charge_and_record(
            ReleaseRequest("a0", "b0", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1))
        )
        assert ledger_store.user_ledgers("u")[0][1] == {"diabetes": Fraction(1)}
        ledger.execute("UPDATE ledgers SET spent = '0/1'")
        with pytest.raises(LedgerStoreError, match="its ledgers differ from the chain"):
            ledger_store.user_ledgers("u")
    finally:
        ledger_store.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize(("column", "value"), [("spent", "one"), ("cap", "2")])
def test_the_owners_listing_refuses_a_ledger_cell_that_is_not_exact_text_naming_its_column(
    ledger: Ledger, column: str, value: str
) -> None:
    ledger_store = open_ledger_store(ledger.url)
    try:
        ledger_store.open_session("u", "chat", {"diabetes": Fraction(2)})
        ledger.execute(f"UPDATE ledgers SET {column} = ?", (value,))
        with pytest.raises(LedgerStoreError) as refused:
            ledger_store.user_ledgers("u")
    finally:
        ledger_store.close()  # type: ignore[attr-defined]
    assert str(refused.value) == f"ledgers.{column}: expected exact non-negative 'p/q' text"
