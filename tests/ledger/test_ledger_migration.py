"""`dpmem ledger migrate`: the chain it writes from a legacy ledger's rows, and how it refuses.

The legacy file is Figure 2's session `user/chat` as the old main wrote it, row by row: four
turns (two affordable dinners charged to the diabetes and debt ledgers, a third whose finance
slot fell back, as the debt cap would be passed, and a check-up whose health slot fell back,
the diabetes cap being spent to the last 2/3). The migration's chain is pinned event by event
(kinds and bodies); every inconsistency is refused in one exact line naming the row, and a
refused file is left byte for byte as it was, with no anchor beside it. Every call passes its
chain key (`KEY`); paths are relative to the test's folder, so the lines are compared whole.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_ledger_binding import LEGACY_SCHEMA, ROOT
from test_ledger_fingerprint import BASE, variant

from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest, SQLiteLedgerStore
from dpmem_ref.ledger.chain import ChainKey
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.ledger.migrate import Routes
from dpmem_ref.ledger.restore import migrate_sqlite
from tests.ledger_fixtures import public_key_in_the_test_folder_fixture

# the environment holds the public key, never KEY; each test in its own folder
_public_key = public_key_in_the_test_folder_fixture()

KEY = ChainKey(secret=b"migration-test-key-0123456789abcdef", keyed=True)
FIGURE = load_interface_file(ROOT / "examples" / "figure2.toml").interface
REFUSED = "ledger database l.db: not migrated, its rows are inconsistent: "
LONG = "a-name-that-runs-well-past-the-forty-characters-a-line-shows"  # cut to its first 40 in a refusal

# (turn id, query, its releases: (slot, view, admitted, charge set, eps)), in the order written
HISTORY: tuple[tuple[str, str, tuple[tuple[str, str, bool, tuple[str, ...], str], ...]], ...] = (
    ("t1", "affordable-dinner", (("food", "low-glycemic", True, ("debt", "diabetes"), "2/3"),
                                 ("finance", "strict-budget", True, ("debt",), "8/3"))),
    ("t2", "affordable-dinner", (("food", "low-glycemic", True, ("debt", "diabetes"), "2/3"),
                                 ("finance", "strict-budget", True, ("debt",), "8/3"))),
    ("t3", "affordable-dinner", (("food", "budget-friendly", True, ("debt", "diabetes"), "2/3"),
                                 ("finance", "finance-generic", False, (), "0/1"))),
    ("t4", "checkup-reminder", (("health", "health-generic", False, (), "0/1"),)),
)  # fmt: skip
LEDGERS = (("diabetes", "2/1", "2/1"), ("debt", "22/3", "8/1"))  # (attribute, spent, cap): Figure 2's caps


def record(query: str, releases: tuple[tuple[str, str, bool, tuple[str, ...], str], ...]) -> str:
    """A turn record as the old main wrote it (the `turns.record` JSON)."""
    return json.dumps(
        {
            "admitted": [admitted for _, _, admitted, _, _ in releases],
            "charges": [[slot, list(charge), eps] for slot, _, admitted, charge, eps in releases if admitted],
            "control": None,
            "query": query,
            "response": f"an answer to {query}",
            "views": [[slot, view] for slot, view, _, _, _ in releases],
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def legacy_file(
    history: Any = HISTORY, ledgers: Any = LEDGERS, edits: tuple[str, ...] = (), path: str = "l.db"
) -> None:
    """A schema-1 file of session user/chat holding `history` and `ledgers`, then `edits` run on it."""
    raw = sqlite3.connect(path)
    raw.executescript(LEGACY_SCHEMA)
    raw.executemany("INSERT INTO ledgers VALUES ('user', 'chat', ?, ?, ?)", ledgers)
    for turn_id, query, releases in history:
        for index, (slot, view, admitted, charge, eps) in enumerate(releases):
            raw.execute(
                "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
                "charge_set, epsilon) VALUES ('user', 'chat', ?, ?, ?, ?, ?, ?, ?, ?)",
                (f"{turn_id}r{index}", turn_id, index, slot, view, int(admitted), json.dumps(sorted(charge)), eps),
            )
        raw.execute(
            "INSERT INTO turns (user, interaction, turn_id, record) VALUES ('user', 'chat', ?, ?)",
            (turn_id, record(query, releases)),
        )
    for statement in edits:
        raw.execute(statement)
    raw.commit()
    raw.close()


def rows(statement: str, path: str = "l.db") -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(statement).fetchall()
    finally:
        connection.close()


def chain(path: str = "l.db") -> list[tuple[str, dict[str, Any]]]:
    return [
        (str(kind), json.loads(str(body))) for kind, body in rows("SELECT kind, body FROM chain ORDER BY seq", path)
    ]


def migrate(interface: Any = FIGURE, path: str = "l.db") -> Any:
    return migrate_sqlite(path, interface_fingerprint(interface), key=KEY, routes=Routes.of(interface))


def test_a_legacy_ledger_is_chained_row_by_row_bound_and_set_to_schema_2() -> None:
    """genesis, `migrate` with the fingerprint, `open` with the session's caps, one `charge` per
    release in seq order (the session's ledgers after it; fallbacks charge nothing), one `turn`
    per turn (its seq, id and the SHA-256 of its record)."""
    legacy_file()
    report = migrate()
    fingerprint = interface_fingerprint(FIGURE)
    assert (report.ok, report.problem, report.fingerprint) == (True, None, fingerprint)
    assert (report.sessions, report.releases, report.turns) == (1, 7, 4)
    assert dict(rows("SELECT key, value FROM meta")) == {"schema": "2", "fingerprint": fingerprint}
    events = chain()
    assert [kind for kind, _ in events] == ["genesis", "migrate", "open"] + ["charge"] * 7 + ["turn"] * 4
    genesis = events[0][1]  # its database id is random
    assert genesis == {"key_id": KEY.key_id, "schema": "2", "database_id": genesis["database_id"]}
    assert events[1][1] == {"fingerprint": fingerprint}
    assert events[2][1] == {"user": "user", "interaction": "chat", "caps": {"debt": "8/1", "diabetes": "2/1"}}
    assert events[3][1] == {
        "user": "user",
        "interaction": "chat",
        "release": {"seq": 1, "release_id": "t1r0", "turn_id": "t1", "index": 0, "slot": "food",
                    "view": "low-glycemic", "admitted": True, "charge_set": ["debt", "diabetes"], "epsilon": "2/3"},
        "ledgers": {"debt": "2/3", "diabetes": "2/3"},
    }  # fmt: skip
    charges = [(body["release"]["seq"], body["release"]["view"], body["ledgers"]) for _, body in events[3:10]]
    assert charges == [
        (1, "low-glycemic", {"debt": "2/3", "diabetes": "2/3"}),
        (2, "strict-budget", {"debt": "10/3", "diabetes": "2/3"}),
        (3, "low-glycemic", {"debt": "4/1", "diabetes": "4/3"}),
        (4, "strict-budget", {"debt": "20/3", "diabetes": "4/3"}),
        (5, "budget-friendly", {"debt": "22/3", "diabetes": "2/1"}),  # the diabetes cap, reached exactly
        (6, "finance-generic", {"debt": "22/3", "diabetes": "2/1"}),
        (7, "health-generic", {"debt": "22/3", "diabetes": "2/1"}),
    ]
    assert [body for _, body in events[10:]] == [
        {"user": "user", "interaction": "chat", "seq": seq, "turn_id": turn_id,
         "record_sha256": hashlib.sha256(record(query, releases).encode()).hexdigest()}
        for seq, (turn_id, query, releases) in enumerate(HISTORY, start=1)
    ]  # fmt: skip
    assert report.high_water is not None and report.high_water.seq == 14
    assert Path("l.db.hwm").is_file()  # anchored at the new head


def _set(column: str, value: str, seq: int) -> str:
    return f"UPDATE releases SET {column} = '{value}' WHERE seq = {seq}"


REFUSALS: dict[str, tuple[tuple[str, ...], str]] = {
    "a fallback with an eps": (
        (_set("epsilon", "8/3", 6),),
        "releases seq 6: a fallback with a charge",
    ),
    "a fallback with a charge set": (
        (_set("charge_set", '["debt"]', 6),),
        "releases seq 6: a fallback with a charge",
    ),
    "a charged release of eps 0": (
        (_set("epsilon", "0/1", 1),),
        "releases seq 1: a charged release with eps 0",
    ),
    "charges past a cap": (
        ("UPDATE ledgers SET cap = '4/3' WHERE attribute = 'diabetes'",),
        "releases seq 5: the charges exceed the cap of diabetes",
    ),
    "a charge to an attribute without a ledger": (
        ("DELETE FROM ledgers WHERE attribute = 'debt'",),
        "releases seq 1: charged to an attribute without a ledger",
    ),
    "a ledger that is not the sum of its charges": (
        ("UPDATE ledgers SET spent = '7/1' WHERE attribute = 'debt'",),
        "a ledger differs from the sum of its logged charges",
    ),
    "an unreadable cap": (
        ("UPDATE ledgers SET cap = 'two' WHERE attribute = 'debt'",),
        "ledgers.cap: expected exact non-negative 'p/q' text",
    ),
    "an unreadable spent value": (
        ("UPDATE ledgers SET spent = '-1/3' WHERE attribute = 'diabetes'",),
        "ledgers.spent: expected exact non-negative 'p/q' text",
    ),
    "an unreadable eps": (
        (_set("epsilon", "2/3 ", 2),),
        "releases.epsilon: expected exact non-negative 'p/q' text",
    ),
    "caps other than the interface's": (
        ("UPDATE ledgers SET cap = '9/1' WHERE attribute = 'debt'",),
        "session user/chat: its caps are not the named interface's",
    ),
    "an unreadable turn record": (
        (f"UPDATE turns SET turn_id = '{LONG}', record = 'not a turn record' WHERE seq = 1",),
        f"turn {LONG[:40]!r}: an unreadable turn record",
    ),
    "a turn of a query the interface lacks": (
        (f"UPDATE turns SET turn_id = '{LONG}', record = replace(record, 'checkup-reminder', '{LONG}') WHERE seq = 4",),
        f"turn {LONG[:40]!r}: query {LONG[:40]!r} is not a query of the named interface",
    ),
    "a slot the interface lacks (after a fallback)": (
        (_set("slot", LONG, 7),),
        f"releases seq 7: slot {LONG[:40]!r} is not a slot of the named interface",
    ),
    "a view outside its slot's vocabulary (after a fallback)": (
        (_set("view", LONG, 7),),
        f"releases seq 7: view {LONG[:40]!r} is not in slot health's vocabulary",
    ),
    "a fallback releasing a view other than the generic one": (
        (_set("view", "strict-budget", 6),),
        "releases seq 6: a fallback that does not release the slot's generic view",
    ),
    "a charge set no read of the slot has": (
        (_set("charge_set", '["diabetes"]', 1), "UPDATE ledgers SET spent = '20/3' WHERE attribute = 'debt'"),
        "releases seq 1: charge set ['diabetes'] at eps 2/3 is no read of slot food in the named interface",
    ),
    "a charge its turn's query does not read": (
        ("UPDATE turns SET record = replace(record, 'affordable-dinner', 'checkup-reminder') WHERE seq = 2",),
        "releases seq 3: query 'checkup-reminder' routes slot food to another charge set or eps",
    ),
    "a turn of a session without ledgers": (
        ("UPDATE turns SET user = 'someone-else' WHERE seq = 4",),
        "a turn of a session without ledgers",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_inconsistency_is_refused_in_one_line_naming_the_row_and_nothing_is_written(case: str) -> None:
    edits, why = REFUSALS[case]
    legacy_file(edits=edits)
    before = Path("l.db").read_bytes()
    with pytest.raises(LedgerStoreError) as refused:
        migrate()
    assert str(refused.value) == REFUSED + why
    assert Path("l.db").read_bytes() == before and not Path("l.db.hwm").exists()


def test_a_turn_is_held_to_its_own_querys_read_of_the_slot() -> None:
    """Two queries read the food slot with other charge sets: a release charged as the one
    query reads it, in a turn of the other, is refused (the catalogue has the read, the turn's
    query does not)."""
    data = variant(lambda d: d["queries"].append({"name": LONG, "reads": [{"slot": "food", "positions": [2]}]}))
    two_reads = interface_from_dict(data).interface
    assert Routes.of(two_reads).by_slot["food"] == {
        (frozenset({"diabetes"}), Fraction(2, 3)),
        (frozenset({"debt"}), Fraction(2, 3)),
    }
    dinner = (("food", "low-glycemic", True, ("diabetes",), "2/3"),)
    ledgers = (("diabetes", "2/3", "2/1"), ("debt", "0/1", "2/1"))
    legacy_file(history=(("l1", LONG, dinner),), ledgers=ledgers)
    with pytest.raises(LedgerStoreError) as refused:
        migrate(two_reads)
    why = f"releases seq 1: query {LONG[:40]!r} routes slot food to another charge set or eps"
    assert str(refused.value) == REFUSED + why
    legacy_file(history=(("d1", "dinner", dinner),), ledgers=ledgers, path="ok.db")
    assert migrate(two_reads, "ok.db").ok


def test_a_ledger_bound_to_another_interface_is_refused_naming_both_fingerprints() -> None:
    legacy_file(edits=("INSERT INTO meta VALUES ('fingerprint', '0123456789abcdef" + "e" * 48 + "')",))
    before = Path("l.db").read_bytes()
    with pytest.raises(InputError) as refused:
        migrate()
    assert str(refused.value) == (
        "ledger database l.db: expected the interface it was created with (fingerprint 0123456789ab), "
        f"found 'a different interface (fingerprint {interface_fingerprint(FIGURE)[:12]})'"
    )
    assert Path("l.db").read_bytes() == before


def test_a_ledger_of_an_unknown_schema_is_refused_in_one_line() -> None:
    legacy_file(edits=("UPDATE meta SET value = '3' WHERE key = 'schema'",))
    with pytest.raises(LedgerStoreError) as refused:
        migrate()
    assert str(refused.value) == "ledger database l.db: meta.schema is not version 1"


def unbound(path: str = "l.db") -> None:
    """Schema 2 with its chain, but charges written through the store API without a fingerprint
    (two reads of `BASE`'s food slot: diabetes, 2/3)."""
    ledger_store = SQLiteLedgerStore(path, key=KEY)
    try:
        opened = ledger_store.open_session("user", "chat", {"diabetes": Fraction(2), "debt": Fraction(2)})
        for n in range(2):
            opened.charge_and_record(
                ReleaseRequest(f"{n}a", f"{n}b", 0, "food", "low-glycemic", "balanced", frozenset({"diabetes"}),
                               Fraction(2, 3))
            )  # fmt: skip
    finally:
        ledger_store.close()


def test_a_chained_ledger_without_a_fingerprint_gets_the_migrate_event_only_and_only_once() -> None:
    unbound()
    written = chain()
    interface = interface_from_dict(BASE).interface
    fingerprint = interface_fingerprint(interface)
    report = migrate(interface)
    assert report.ok and report.fingerprint == fingerprint and report.releases == 2
    assert chain() == [*written, ("migrate", {"fingerprint": fingerprint})]
    assert dict(rows("SELECT key, value FROM meta")) == {"schema": "2", "fingerprint": fingerprint}
    assert report.high_water is not None and report.high_water.seq == len(written) + 1
    bound = Path("l.db").read_bytes()
    again = migrate(interface)  # already bound to this interface: nothing to write
    assert again.ok and again.high_water == report.high_water and Path("l.db").read_bytes() == bound


def test_a_schema_2_ledger_without_rows_or_chain_is_chained_from_genesis() -> None:
    """No ledgers to launder: the emptied chain is written anew, genesis first."""
    SQLiteLedgerStore("l.db", key=KEY).close()
    raw = sqlite3.connect("l.db")
    raw.execute("DELETE FROM chain")
    raw.commit()
    raw.close()
    report = migrate()
    fingerprint = interface_fingerprint(FIGURE)
    assert report.ok and report.fingerprint == fingerprint
    assert [kind for kind, _ in chain()] == ["genesis", "migrate"] and chain()[1][1] == {"fingerprint": fingerprint}
    assert dict(rows("SELECT key, value FROM meta")) == {"schema": "2", "fingerprint": fingerprint}


def test_a_schema_2_ledger_whose_chain_was_emptied_is_refused_as_tampering() -> None:
    unbound()
    raw = sqlite3.connect("l.db")
    raw.execute("DELETE FROM chain")
    raw.commit()
    raw.close()
    before = Path("l.db").read_bytes()
    with pytest.raises(LedgerStoreError) as refused:
        migrate(interface_from_dict(BASE).interface)
    assert str(refused.value) == (
        "ledger database l.db: not migrated, a schema-2 ledger without its chain was tampered with (its chain "
        "dropped or emptied); put the newest verified backup back with dpmem ledger restore"
    )
    assert Path("l.db").read_bytes() == before
