"""The tamper-evident ledger. Plain-SQL edits of committed rows FAIL verify.

An attacker who can write the database but does not hold the HMAC key edits, deletes,
inserts and reorders rows of every table with plain SQL, on SQLite and on PostgreSQL,
including *consistent* forgeries that keep every table-level sum right (a release
relabelled as a free fallback with its ledger lowered; a charged release with eps 0; a
whole session's ledgers and releases deleted while its turns remain). `dpmem ledger
verify` fails each, naming the first bad row, exits 1 with one line; a key holder's own
writes verify; corrupt bytes and oversized values are a one-line FAIL, never an internal
error. On the old main (no chain) the consistent forgeries passed verify.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.ledger import open_ledger_store
from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIGURE2 = ROOT / "examples" / "figure2.toml"
KEY = "chain-test-key-0123456789abcdef"
QUERIES = ["affordable-dinner", "checkup-reminder", "affordable-dinner", "weeknight-plan"]


@pytest.fixture(autouse=True, scope="module")
def _chain_key() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPMEM_LEDGER_KEY", KEY)
        patch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)
        yield


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One populated SQLite ledger (and its .hwm); each test works on a copy."""
    path = tmp_path_factory.mktemp("chain") / "template.db"
    populate(str(path))
    return path


def fresh(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "l.db"
    for suffix in ("", "-wal", ".hwm"):
        if Path(f"{template}{suffix}").exists():
            shutil.copyfile(f"{template}{suffix}", f"{path}{suffix}")
    return path


def populate(url: str) -> None:
    """Two interactions of Figure 2 (charged selections, fallbacks, turns), as a key holder."""
    loaded = load_interface_file(FIGURE2)
    ledger_store = open_ledger_store(url)
    for interaction in ("chat-1", "chat-2"):
        session = DurableSession.open(
            loaded.interface, ledger_store, "user", interaction, loaded.store("M"), SeededRandomSource(3), turn_deadline_s=None
        )
        for query in QUERIES:
            session.run_turn(query)
    ledger_store.close()


def verify_cli(target: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """`dpmem ledger verify TARGET` (in process, with the key in the environment)."""
    code, out, err = run_cli(["ledger", "verify", target, *extra])
    return subprocess.CompletedProcess(["dpmem"], code, out, err)


def failed(run: subprocess.CompletedProcess[str], words: str) -> None:
    assert run.returncode == 1, (run.returncode, run.stdout, run.stderr)
    assert run.stdout.count("\n") == 1 and "FAILED" in run.stdout, run.stdout
    assert words in run.stdout, run.stdout
    assert "Traceback" not in run.stderr and "internal error" not in run.stdout + run.stderr


LOWER = "lower the ledgers of that release's charge set by its eps"
# Each attack: (name, SQL statements on the SQLite schema, words naming the first bad row).
# `{first_charged}` is the seq of the first admitted release with a non-empty charge set.
ATTACKS = [
    # the consistent forgeries: every table-level sum stays right
    (
        "relabel a release as a free fallback, ledger lowered to match",
        [
            "UPDATE releases SET admitted = 0, charge_set = '[]', epsilon = '0/1', view = 'generic-view' "
            "WHERE seq = {first_charged}",
            LOWER,
        ],
        "releases seq {first_charged}: differs from its chain event",
    ),
    (
        "a charged release with eps 0, ledger lowered to match",
        [
            "UPDATE releases SET epsilon = '0/1' WHERE seq = {first_charged}",
            LOWER,
        ],
        "releases seq {first_charged}: differs from its chain event",
    ),
    (
        "a session's ledgers and releases deleted, its turns kept",
        [
            "DELETE FROM releases WHERE interaction = 'chat-1'",
            "DELETE FROM ledgers WHERE interaction = 'chat-1'",
        ],
        "deleted (its chain event remains)",
    ),
    # edits, deletions, insertions, reorderings of the chain itself
    ("edit a chain body", ["UPDATE chain SET body = replace(body, '2/3', '1/3') WHERE seq = 5"], "chain seq 5"),
    ("delete a chain row", ["DELETE FROM chain WHERE seq = 6"], "chain seq 7: expected seq 6"),
    (
        "insert a chain row",
        ["UPDATE chain SET seq = seq + 1000 WHERE seq >= 4", "UPDATE chain SET seq = seq - 999 WHERE seq >= 1004",
         "INSERT INTO chain (seq, kind, body, mac) VALUES (4, 'open', '{{}}', '" + "0" * 64 + "')"],
        "chain seq 4: MAC does not match",
    ),  # fmt: skip
    (
        "reorder two chain rows",
        ["UPDATE chain SET seq = -1 WHERE seq = 5", "UPDATE chain SET seq = 5 WHERE seq = 6",
         "UPDATE chain SET seq = 6 WHERE seq = -1"],
        "chain seq 5: MAC does not match",
    ),  # fmt: skip
    ("forge a chain MAC", ["UPDATE chain SET mac = '" + "a" * 64 + "' WHERE seq = 3"], "chain seq 3"),
    # rows of the other tables
    ("insert a release", ["INSERT INTO releases SELECT seq + 500, user, interaction, release_id || 'ff', "
                          "turn_id, slot_index, slot, view, admitted, charge_set, epsilon FROM releases WHERE seq = 1"],
     "releases seq 501: not in the chain"),  # fmt: skip
    ("delete a release", ["DELETE FROM releases WHERE seq = 2"], "releases seq 2: deleted"),
    ("edit a released view", ["UPDATE releases SET view = 'other' WHERE seq = 1"], "releases seq 1: differs"),
    ("reorder two releases", ["UPDATE releases SET seq = -1 WHERE seq = 1", "UPDATE releases SET seq = 1 WHERE seq = 2",
                              "UPDATE releases SET seq = 2 WHERE seq = -1"], "releases seq 1: differs"),  # fmt: skip
    ("edit a turn record", ["UPDATE turns SET record = replace(record, 'dinner', 'lunch') WHERE seq = 1"],
     "turns seq 1: differs"),  # fmt: skip
    ("delete a turn", ["DELETE FROM turns WHERE seq = 3"], "turns seq 3: deleted"),
    ("raise a cap", ["UPDATE ledgers SET cap = '9/1' WHERE attribute = 'diabetes' AND interaction = 'chat-2'"],
     "ledgers row (user, chat-2, diabetes)"),  # fmt: skip
    ("rebind the fingerprint", ["UPDATE meta SET value = '" + "e" * 64 + "' WHERE key = 'fingerprint'"],
     "meta.fingerprint"),  # fmt: skip
    ("truncate the tail", ["DELETE FROM chain WHERE seq = (SELECT max(seq) FROM chain)",
                           "DELETE FROM turns WHERE seq = (SELECT max(seq) FROM turns)"], "high-water mark"),  # fmt: skip
]


def _first_charged(execute: Callable[[str], list[tuple[object, ...]]], table: str = "ledgers") -> tuple[int, list[str]]:
    """The first charged release of chat-1, and the SQL lowering its ledgers to match."""
    rows = execute(
        "SELECT seq, epsilon, charge_set FROM releases WHERE interaction = 'chat-1' AND admitted = 1 "
        "AND charge_set <> '[]' ORDER BY seq LIMIT 1"
    )
    seq, epsilon, charge_set = rows[0]
    lower = []
    for attribute in json.loads(str(charge_set)):
        query = f"SELECT spent FROM {table} WHERE interaction = 'chat-1' AND attribute = '{attribute}'"
        (spent,) = execute(query.replace(table, "ledgers"))[0]
        value = Fraction(str(spent)) - Fraction(str(epsilon))
        lower.append(
            f"UPDATE {table} SET spent = '{value.numerator}/{value.denominator}' "
            f"WHERE interaction = 'chat-1' AND attribute = '{attribute}'"
        )
    return int(str(seq)), lower


def _expand(statements: list[str], first: int, lower: list[str]) -> list[str]:
    out: list[str] = []
    for statement in statements:
        out.extend(lower if statement == LOWER else [statement.format(first_charged=first)])
    return out


def _sqlite_execute(path: Path) -> Callable[[str], list[tuple[object, ...]]]:
    def execute(sql: str) -> list[tuple[object, ...]]:
        raw = sqlite3.connect(path)
        try:
            rows = raw.execute(sql).fetchall()
            raw.commit()
        finally:
            raw.close()
        return rows

    return execute


@pytest.mark.parametrize(("name", "statements", "words"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_sqlite_plain_sql_attacks_fail_verify(
    template: Path, tmp_path: Path, name: str, statements: list[str], words: str
) -> None:
    path = fresh(template, tmp_path)
    assert verify_sqlite(path).ok, verify_sqlite(path).line()  # the key holder's writes verify
    execute = _sqlite_execute(path)
    first, lower = _first_charged(execute)
    for statement in _expand(statements, first, lower):
        execute(statement)
    failed(verify_cli(str(path)), words.format(first_charged=first))


def table_level_consistent(path: Path) -> bool:
    """The checks the old verify ran (and all a verifier without the chain can run): every
    ledger equals the sum of its admitted charges, <= its cap, no fallback with a charge."""
    execute = _sqlite_execute(path)
    ledgers = {(str(u), str(i), str(a)): (Fraction(str(s)), Fraction(str(c)))
               for u, i, a, s, c in execute("SELECT user, interaction, attribute, spent, cap FROM ledgers")}  # fmt: skip
    sums = dict.fromkeys(ledgers, Fraction(0))
    for user, interaction, admitted, charge_set, epsilon in execute(
        "SELECT user, interaction, admitted, charge_set, epsilon FROM releases ORDER BY seq"
    ):
        if not admitted and (json.loads(str(charge_set)) or Fraction(str(epsilon))):
            return False
        for attribute in json.loads(str(charge_set)):
            key = (str(user), str(interaction), attribute)
            if key not in sums:
                return False
            sums[key] += Fraction(str(epsilon))
    return all(sums[k] == s <= c for k, (s, c) in ledgers.items())


def test_the_forgeries_keep_every_table_level_sum_right(template: Path, tmp_path: Path) -> None:
    """The consistent forgeries are consistent: only the chain can tell."""
    assert table_level_consistent(fresh(template, tmp_path))
    for index, (_, statements, _) in enumerate(ATTACKS[:3]):
        folder = tmp_path / str(index)
        folder.mkdir()
        path = fresh(template, folder)
        execute = _sqlite_execute(path)
        first, lower = _first_charged(execute)
        for statement in _expand(statements, first, lower):
            execute(statement)
        assert table_level_consistent(path)  # sums, caps, fallbacks: all still consistent


def test_a_key_holders_writes_verify_and_another_key_does_not(template: Path, tmp_path: Path) -> None:
    path = fresh(template, tmp_path)
    run = verify_cli(str(path))
    assert run.returncode == 0 and "chain of" in run.stdout and "high-water mark" in run.stdout, run.stdout
    other = subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "ledger", "verify", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "DPMEM_LEDGER_KEY": "another-key-of-enough-length"},
        timeout=60,
    )
    assert other.returncode in (1, 2) and other.stdout.count("\n") + other.stderr.count("\n") == 1
    assert KEY not in other.stdout + other.stderr
    # A writer with another key (or none) is refused on open: one key per database.
    from dpmem_ref.ledger import LedgerStoreError
    from dpmem_ref.ledger.chain import ChainKey, unkeyed
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore

    for key in (unkeyed(), ChainKey(secret=b"x" * 32, keyed=True)):
        with pytest.raises(LedgerStoreError, match="chained with key id"):
            SQLiteLedgerStore(path, key=key)


@pytest.mark.parametrize("relabel", [True, False], ids=["genesis relabelled unkeyed", "genesis key id kept"])
def test_a_forger_without_the_key_cannot_rebuild_the_chain(template: Path, tmp_path: Path, relabel: bool) -> None:
    """Recomputing every MAC with a key of the forger's choosing (here the public unkeyed
    one) fails: either the genesis names another key, or its MAC does not match."""
    from dpmem_ref.ledger.chain import GENESIS_MAC, genesis_body, unkeyed

    path = fresh(template, tmp_path)
    execute = _sqlite_execute(path)
    forger = unkeyed()
    previous = GENESIS_MAC
    for seq, kind, body in execute("SELECT seq, kind, body FROM chain ORDER BY seq"):
        text = genesis_body(forger, "2") if seq == 1 and relabel else str(body)
        mac = forger.mac(int(str(seq)), str(kind), previous, text)
        execute(f"UPDATE chain SET body = '{text}', mac = '{mac}' WHERE seq = {seq}")
        previous = mac
    words = "chained with key id unkeyed" if relabel else "chain seq 1: MAC does not match"
    failed(verify_cli(str(path), "--no-high-water"), words)


@pytest.mark.parametrize(
    ("statement", "words"),
    [
        ("UPDATE ledgers SET spent = '" + "9" * 5000 + "/1' WHERE rowid = 1", "p/q"),
        ("UPDATE releases SET epsilon = '1/" + "7" * 5000 + "' WHERE seq = 1", "p/q"),
        ("UPDATE chain SET body = CAST(x'80ff00fe' AS TEXT) WHERE seq = 4", "chain seq 4"),
        ("UPDATE releases SET view = CAST(x'c3' AS TEXT) WHERE seq = 1", "releases"),
        ("UPDATE releases SET slot_index = 'x' WHERE seq = 1", "releases seq 1"),
        ("UPDATE turns SET record = x'00ff' WHERE seq = 1", "turns"),
        ("UPDATE chain SET seq = 9999 WHERE seq = 2", "chain seq 3: expected seq 2"),
        ("UPDATE chain SET body = '" + "[" * 5000 + "' WHERE seq = 2", "chain seq 2"),
        ("UPDATE ledgers SET cap = '-1/1' WHERE rowid = 1", "p/q"),
        ("UPDATE chain SET kind = CAST(x'ff' AS TEXT) WHERE seq = 3", "chain seq 3"),
    ],
)
def test_corrupt_bytes_and_huge_values_are_one_line(template: Path, tmp_path: Path, statement: str, words: str) -> None:
    path = fresh(template, tmp_path)
    _sqlite_execute(path)(statement)
    failed(verify_cli(str(path)), words)


# ------------------------------------------------------------------------------- PostgreSQL


def _pg_url() -> str:
    import tests.postgres_server as postgres_server

    return postgres_server.new_database()


PG_ATTACKS = [
    (
        "relabel a release as a free fallback, ledger lowered to match",
        [
            "UPDATE dpmem_releases SET admitted = false, charge_set = '[]', epsilon = '0/1' WHERE seq = {first_charged}",
            LOWER,
        ],
        "releases seq {first_charged}: differs from its chain event",
    ),
    (
        "a charged release with eps 0",
        [
            "UPDATE dpmem_releases SET epsilon = '0/1' WHERE seq = {first_charged}",
            LOWER,
        ],
        "releases seq {first_charged}: differs from its chain event",
    ),
    (
        "a session's ledgers and releases deleted, its turns kept",
        ["DELETE FROM dpmem_releases WHERE interaction = 'chat-1'", "DELETE FROM dpmem_ledgers WHERE interaction = 'chat-1'"],
        "deleted (its chain event remains)",
    ),  # fmt: skip
    ("edit a chain body", ["UPDATE dpmem_chain SET body = replace(body, '2/3', '1/3') WHERE seq = 5"], "chain seq 5"),
    ("delete a chain row", ["DELETE FROM dpmem_chain WHERE seq = 6"], "chain seq 7: expected seq 6"),
    ("insert a chain row", ["UPDATE dpmem_chain SET seq = seq + 1000 WHERE seq >= 4",
                            "UPDATE dpmem_chain SET seq = seq - 999 WHERE seq >= 1004",
                            "INSERT INTO dpmem_chain VALUES (4, 'open', '{{}}', '" + "0" * 64 + "')"],
     "chain seq 4: MAC does not match"),  # fmt: skip
    ("reorder two chain rows", ["UPDATE dpmem_chain SET seq = -1 WHERE seq = 5",
                                "UPDATE dpmem_chain SET seq = 5 WHERE seq = 6",
                                "UPDATE dpmem_chain SET seq = 6 WHERE seq = -1"], "chain seq 5: MAC does not match"),  # fmt: skip
    ("delete a release", ["DELETE FROM dpmem_releases WHERE seq = 2"], "releases seq 2: deleted"),
    ("insert a turn", ["INSERT INTO dpmem_turns (user_name, interaction, turn_id, record) "
                       "SELECT user_name, interaction, turn_id || 'ff', record FROM dpmem_turns WHERE seq = 1"],
     "not in the chain (inserted)"),  # fmt: skip
    ("edit a turn record", ["UPDATE dpmem_turns SET record = replace(record, 'dinner', 'lunch') WHERE seq = 1"],
     "turns seq 1: differs"),  # fmt: skip
]


@pytest.mark.parametrize(("name", "statements", "words"), PG_ATTACKS, ids=[a[0] for a in PG_ATTACKS])
def test_postgres_plain_sql_attacks_fail_verify(name: str, statements: list[str], words: str) -> None:
    import psycopg

    import tests.postgres_server as postgres_server

    url = _pg_url()
    populate(url)
    assert verify_cli(url).returncode == 0, verify_cli(url).stdout  # the key holder's writes verify
    with psycopg.connect(url, autocommit=True) as connection:

        def execute(sql: str) -> list[tuple[object, ...]]:
            sql = sql.replace("FROM releases", "FROM dpmem_releases").replace("FROM ledgers", "FROM dpmem_ledgers")
            sql = sql.replace("admitted = 1", "admitted")
            return [tuple(r) for r in connection.execute(sql).fetchall()]  # type: ignore[arg-type]

        first, lower = _first_charged(execute, "dpmem_ledgers")
        for statement in _expand(statements, first, lower):
            connection.execute(statement)  # type: ignore[arg-type]
    run = verify_cli(url)
    failed(run, words.format(first_charged=first))
    assert postgres_server.PASSWORD not in run.stdout + run.stderr


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE ledgers SET spent = '" + "9" * 5000 + "/1' WHERE interaction = 'chat-1'",
        "UPDATE releases SET epsilon = '1/" + "7" * 5000 + "' WHERE interaction = 'chat-1'",
        "UPDATE turns SET record = CAST(x'80ff' AS TEXT) WHERE interaction = 'chat-1'",
    ],
)
def test_a_corrupted_store_stops_dpmem_run_with_one_line(template: Path, tmp_path: Path, statement: str) -> None:
    path = fresh(template, tmp_path)
    _sqlite_execute(path)(statement)
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    code, out, err = run_cli(
        ["run", str(FIGURE2), "--store", "M", "--queries", str(queries), "--store-url", f"sqlite:///{path}",
         "--interaction", "chat-1", "--user", "user"]
    )  # fmt: skip
    assert code == 2 and out == "" and err.count("\n") == 1 and "internal error" not in err, (code, out, err)


def test_multi_scope_charges_and_rebinds_replay_and_their_forgeries_fail(tmp_path: Path) -> None:
    """The event kinds budget scopes need: a charge that debits several sessions
    in one transaction, and an interface change carrying the ledgers over with meta rows.
    Written here as a store primitive would write them, under the key; then forged."""
    from dpmem_ref.ledger import SessionKey, SlotRelease
    from dpmem_ref.ledger.chain import charge_body, key_from_environment, rebind_body
    from dpmem_ref.ledger.codecs import release_values
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
    from dpmem_ref.ledger.sqlite.schema import append_event

    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    app, user = SessionKey("u", "app:a"), SessionKey("u", "user-cap")
    for key in (app, user):
        ledger_store.open_session(key.user, key.interaction, {"diabetes": Fraction(2)}, fingerprint="f" * 64)
    chain_key = key_from_environment()
    eps = Fraction(2, 3)
    with ledger_store.transaction() as connection:
        for key in (app, user):
            connection.execute(
                "UPDATE ledgers SET spent = '2/3' WHERE user = ? AND interaction = ?", (key.user, key.interaction)
            )
        row = SlotRelease(0, "ab", "cd", 0, "food", "low", True, frozenset({"diabetes"}), eps)
        cursor = connection.execute(
            "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
            "charge_set, epsilon) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            release_values(app, row),
        )
        row = SlotRelease(int(cursor.lastrowid or 0), "ab", "cd", 0, "food", "low", True, frozenset({"diabetes"}), eps)
        body = charge_body(app, row, {"diabetes": eps}, [(user, {"diabetes": eps})])
        append_event(connection, chain_key, "charge", body)
    with ledger_store.transaction() as connection:  # a cap raised and an attribute added, ledgers carried
        connection.execute("UPDATE meta SET value = ? WHERE key = 'fingerprint'", ("e" * 64,))
        connection.execute("INSERT INTO meta VALUES ('runtime.epoch', '1')")
        connection.execute("UPDATE ledgers SET cap = '3/1' WHERE interaction = 'app:a'")
        connection.execute("INSERT INTO ledgers VALUES ('u', 'app:a', 'debt', '0/1', '5/1')")
        sessions = [(app, {"diabetes": eps, "debt": Fraction(0)}, {"diabetes": Fraction(3), "debt": Fraction(5)})]
        append_event(connection, chain_key, "rebind", rebind_body("f" * 64, "e" * 64, {"runtime.epoch": "1"}, sessions))
    ledger_store.close()
    from dpmem_ref.ledger.anchor import high_water_path, write_anchor
    from dpmem_ref.ledger.chain import HighWater

    raw = sqlite3.connect(path)
    head = raw.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    raw.close()
    write_anchor(high_water_path(path), chain_key, ledger_store.identity, HighWater(int(head[0]), str(head[1])))
    report = verify_sqlite(path)
    assert report.ok, report.line()
    for statement, words in (
        ("UPDATE ledgers SET spent = '0/1' WHERE interaction = 'user-cap'", "ledgers row (u, user-cap, diabetes)"),
        ("UPDATE meta SET value = '2' WHERE key = 'runtime.epoch'", "meta row runtime.epoch"),
        ("DELETE FROM meta WHERE key = 'runtime.epoch'", "meta row runtime.epoch"),
        ("UPDATE ledgers SET cap = '9/1' WHERE interaction = 'app:a' AND attribute = 'debt'", "ledgers row"),
    ):
        copy = tmp_path / f"c{abs(hash(statement))}.db"
        shutil.copyfile(path, copy)
        shutil.copyfile(f"{path}.hwm", f"{copy}.hwm")
        _sqlite_execute(copy)(statement)
        failed(verify_cli(str(copy)), words)


def test_a_turns_chain_event_names_the_seq_its_row_got(tmp_path: Path) -> None:
    """The event carries the row's own seq, never a stand-in: after a plain-SQL edit that
    left a turn at seq -1 (and the table's sequence below it), SQLite gives the next turn
    seq 0, its event says 0, and verify names that event (a seq must be positive)."""
    from dpmem_ref.core.transcript import TurnRecord
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore

    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", {"a": Fraction(1)})
    execute = _sqlite_execute(path)
    execute("INSERT INTO turns (seq, user, interaction, turn_id, record) VALUES (-1, 'u', 'i', 'edited', '{}')")
    execute("UPDATE sqlite_sequence SET seq = -1 WHERE name = 'turns'")
    session.record_turn("a1", TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=()))
    ledger_store.close()
    assert execute("SELECT seq FROM turns WHERE turn_id = 'a1'") == [(0,)]
    events = execute("SELECT seq, body FROM chain WHERE kind = 'turn'")
    assert [(seq, json.loads(str(body))["seq"]) for seq, body in events] == [(3, 0)]
    assert verify_sqlite(path).line() == f"ledger {path}: FAILED: chain seq 3 (turn): not a positive integer seq"


def test_a_charges_chain_event_and_outcome_name_the_seq_its_release_row_got(tmp_path: Path) -> None:
    """As for a turn: after a plain-SQL edit that left a release at seq -1 (and the table's
    sequence below it), SQLite gives the next release seq 0; the outcome, the charge event
    and the row all say 0, never a stand-in, and verify names that event."""
    from dpmem_ref.ledger.facts import ReleaseRequest
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore

    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", {"a": Fraction(1)})
    execute = _sqlite_execute(path)
    execute(
        "INSERT INTO releases (seq, user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
        "charge_set, epsilon) VALUES (-1, 'u', 'i', 'e', 'e', 0, 's', 'v', 0, '', '0/1')"
    )
    execute("UPDATE sqlite_sequence SET seq = -1 WHERE name = 'releases'")
    request = ReleaseRequest("a1", "b1", 0, "s", "low", "generic", frozenset({"a"}), Fraction(1, 3))
    outcome = session.charge_and_record(request)
    ledger_store.close()
    assert outcome.release.seq == 0
    assert execute("SELECT seq FROM releases WHERE release_id = 'a1'") == [(0,)]
    events = execute("SELECT seq, body FROM chain WHERE kind = 'charge'")
    assert [(seq, json.loads(str(body))["release"]["seq"]) for seq, body in events] == [(3, 0)]
    assert verify_sqlite(path).line() == f"ledger {path}: FAILED: chain seq 3 (charge): not a positive integer seq"
