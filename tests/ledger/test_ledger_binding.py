"""Binding. A ledger without a fingerprint is refused; migration names the interface.

The issue's run: a ledger written before the fingerprint existed (same schema version,
no fingerprint row) was bound by whichever interface opened it first, and an interface
with equal caps but other groups then released 6 views uncharged. Here every such
database (a legacy schema-1 file with rows, a schema-2 file whose charges were written
without a fingerprint, a file whose fingerprint row was deleted) is refused with one line
that names `dpmem ledger migrate DB --interface FILE`; the migration binds and chains it
to the interface the operator names, and then only that interface runs on it.

The fingerprint is canonical over view order within a slot under the EM selector (whose
release distribution gives each view a probability that depends on its score only:
checked here), and keeps the order for the argmax selector, which reads it on ties.
"""

from __future__ import annotations

import copy
import itertools
import json
import sqlite3
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import pytest
from test_ledger_fingerprint import BASE, variant

from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import (
    LedgerStoreError,
    ReleaseRequest,
    SQLiteLedgerStore,
    interface_fingerprint,
    open_ledger_store,
)
from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.ledger.chain import ChainKey, HighWater, key_from_environment
from dpmem_ref.ledger.migrate import Routes, migrate_rows
from dpmem_ref.ledger.postgres.schema import SCHEMA as POSTGRES_SCHEMA
from dpmem_ref.ledger.postgres.verify import _postgres_sql, migrate_postgres
from dpmem_ref.ledger.verify import LedgerRows, replay
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.broken import ArgmaxSelector
from dpmem_ref.turn import InterfaceState, begin_turn
from dpmem_ref.turn.durable import DurableSession
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
SWAPPED = variant(
    lambda d: d["attributes"].update({"diabetes": {"group": [2], "cap": 2}, "debt": {"group": [1], "cap": 2}})
)


@pytest.fixture(autouse=True)
def _chain_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "binding-test-key-0123456789abcdef")
    monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)
    yield


LEGACY_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ledgers (user TEXT NOT NULL, interaction TEXT NOT NULL, attribute TEXT NOT NULL,
    spent TEXT NOT NULL, cap TEXT NOT NULL, PRIMARY KEY (user, interaction, attribute));
CREATE TABLE releases (seq INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, interaction TEXT NOT NULL,
    release_id TEXT NOT NULL UNIQUE, turn_id TEXT NOT NULL, slot_index INTEGER NOT NULL, slot TEXT NOT NULL,
    view TEXT NOT NULL, admitted INTEGER NOT NULL CHECK (admitted IN (0, 1)), charge_set TEXT NOT NULL,
    epsilon TEXT NOT NULL);
CREATE TABLE turns (seq INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL, interaction TEXT NOT NULL,
    turn_id TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '1');
"""


def legacy_ledger(
    path: Path,
    spent: str = "4/3",
    fingerprint: str | None = None,
    charge_set: tuple[str, ...] = ("debt", "diabetes"),
    schema: str = LEGACY_SCHEMA,
) -> None:
    """A file as the old main wrote it: schema 1, two charges of 2/3 of Figure 2's food slot
    (to debt and diabetes, as its route declares; `charge_set` plants another)."""
    raw = sqlite3.connect(path)
    raw.executescript(schema)
    if fingerprint is not None:
        raw.execute("INSERT INTO meta VALUES ('fingerprint', ?)", (fingerprint,))
    debt = "4/3" if "debt" in charge_set else "0/1"
    raw.executemany(  # Figure 2's caps
        "INSERT INTO ledgers VALUES ('user', 'chat', ?, ?, ?)", [("diabetes", spent, "2/1"), ("debt", debt, "8/1")]
    )
    for n in range(2):
        raw.execute(
            "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
            "charge_set, epsilon) VALUES ('user', 'chat', ?, ?, 0, 'food', 'low-glycemic', 1, ?, '2/3')",
            (f"{n}a", f"{n}b", json.dumps(sorted(charge_set))),
        )
    raw.commit()
    raw.close()


def session(data: dict[str, Any], path: Path, seed: int = 0) -> DurableSession:
    loaded = interface_from_dict(data)
    ledger_store = SQLiteLedgerStore(path)
    return DurableSession.open(
        loaded.interface, ledger_store, "user", "chat", loaded.store("M"), SeededRandomSource(seed), turn_deadline_s=None
    )


def unbound_with_charges(path: Path) -> None:
    """Schema 2, but charges written through the store API without a fingerprint."""
    ledger_store = SQLiteLedgerStore(path)
    opened = ledger_store.open_session("user", "chat", {"diabetes": Fraction(2), "debt": Fraction(2)})
    for n in range(2):
        opened.charge_and_record(
            ReleaseRequest(f"{n}a", f"{n}b", 0, "food", "low-glycemic", "balanced", frozenset({"diabetes"}), Fraction(2, 3))
        )
    ledger_store.close()


def deleted_fingerprint(path: Path) -> None:
    session(BASE, path).run_turn("dinner")
    raw = sqlite3.connect(path)
    raw.execute("DELETE FROM meta WHERE key = 'fingerprint'")
    raw.commit()
    raw.close()


UNBOUND = {
    "legacy schema 1 with rows": lambda p: legacy_ledger(p),
    "legacy schema 1 with a fingerprint row": lambda p: legacy_ledger(p, fingerprint="d" * 64),
    "charges without a fingerprint": unbound_with_charges,
}


@pytest.mark.parametrize("name", sorted(UNBOUND))
def test_a_ledger_without_a_fingerprint_is_refused_with_the_migration_command(name: str, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    UNBOUND[name](path)
    for data in (BASE, SWAPPED):  # neither the right interface nor an impostor binds it
        with pytest.raises(LedgerStoreError) as refused:
            session(data, path)
        message = str(refused.value)
        assert f"dpmem ledger migrate {path} --interface FILE" in message and "\n" not in message
    code, out, err = run_cli(["run", str(ROOT / "examples" / "figure2.toml"), "--store", "M", "--queries",
                              str(_queries(tmp_path)), "--store-url", f"sqlite:///{path}"])  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "dpmem ledger migrate" in err and out == "", (code, out, err)


def test_a_deleted_fingerprint_row_is_tampering_refused_without_pointing_at_migrate(tmp_path: Path) -> None:
    """The chain bound the interface: a deleted meta row is an edit, caught by the verification
    on open, and the advice never names migrate (which would re-bind the tampered rows)."""
    path = tmp_path / "l.db"
    deleted_fingerprint(path)
    for data in (BASE, SWAPPED):
        with pytest.raises(LedgerStoreError) as refused:
            session(data, path)
        message = str(refused.value)
        assert "meta.fingerprint differs" in message and "migrate" not in message and "\n" not in message
    code, out, err = run_cli(["run", str(ROOT / "examples" / "figure2.toml"), "--store", "M", "--queries",
                              str(_queries(tmp_path)), "--store-url", f"sqlite:///{path}"])  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "migrate" not in err and out == "", (code, out, err)


def _queries(tmp_path: Path) -> Path:
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    return queries


def test_the_issues_attack_equal_caps_other_groups_releases_nothing_uncharged(tmp_path: Path) -> None:
    """Charges of `BASE` (diabetes reads position 1) and an impostor with swapped groups."""
    path = tmp_path / "l.db"
    unbound_with_charges(path)
    with pytest.raises(LedgerStoreError, match="dpmem ledger migrate"):
        session(SWAPPED, path)
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT count(*) FROM releases").fetchone() == (2,)  # nothing more was released
    raw.close()


def test_migration_binds_the_named_interface_and_chains_every_row(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    legacy_ledger(path)
    figure = ROOT / "examples" / "figure2.toml"
    run = run_cli(["ledger", "migrate", str(path), "--interface", str(figure)])
    assert run[0] == 0 and "migrated: ledger" in run[1] and "chain of" in run[1], run
    report = verify_sqlite(path)
    assert report.ok and report.chain is not None and report.chain.migrated and report.releases == 2
    assert report.fingerprint == interface_fingerprint(load_interface_file(figure).interface)
    loaded = load_interface_file(figure)
    ledger_store = SQLiteLedgerStore(path)
    resumed = DurableSession.open(loaded.interface, ledger_store, "user", "chat", loaded.store("M"), SeededRandomSource(0))
    assert resumed.state().ledgers[loaded.interface.policy.attribute_names.index("diabetes")] == Fraction(4, 3)
    ledger_store.close()
    again = run_cli(["ledger", "migrate", str(path), "--interface", str(figure)])  # idempotent
    assert again[0] == 0
    with pytest.raises(Exception, match="a different interface"):
        session(BASE, path)  # now bound: another interface is refused as ever


def test_migration_replays_the_charge_log_against_the_named_interfaces_routes(tmp_path: Path) -> None:
    """The issue's case: equal caps, but the log charges the food slot to diabetes alone while
    Figure 2 routes it to {debt, diabetes}: refused in one line naming the row, nothing written."""
    figure = str(ROOT / "examples" / "figure2.toml")
    path = tmp_path / "l.db"
    legacy_ledger(path, charge_set=("diabetes",))
    before = path.read_bytes()
    code, out, err = run_cli(["ledger", "migrate", str(path), "--interface", figure])
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
    assert "releases seq 1: charge set ['diabetes'] at eps 2/3 is no read of slot food" in err
    assert path.read_bytes() == before
    for statement, words in (
        ("UPDATE releases SET slot = 'nowhere'", "is not a slot of the named interface"),
        ("UPDATE releases SET view = 'forged'", "is not in slot food's vocabulary"),
        ("UPDATE releases SET epsilon = '1/3'", "charge set ['debt', 'diabetes'] at eps 1/3 is no read"),
    ):
        bad = tmp_path / f"{abs(hash(statement))}.db"
        legacy_ledger(bad)
        raw = sqlite3.connect(bad)
        raw.execute(statement)
        if "epsilon" in statement:
            raw.execute("UPDATE ledgers SET spent = '2/3' WHERE attribute IN ('debt', 'diabetes')")
        raw.commit()
        raw.close()
        code, out, err = run_cli(["ledger", "migrate", str(bad), "--interface", figure])
        assert code == 2 and words in err and err.count("\n") == 1, (statement, err)


def test_migration_refuses_an_inconsistent_or_foreign_ledger(tmp_path: Path) -> None:
    figure = str(ROOT / "examples" / "figure2.toml")
    bad = tmp_path / "bad.db"
    legacy_ledger(bad, spent="1/3")  # the ledger disagrees with its charge log
    code, out, err = run_cli(["ledger", "migrate", str(bad), "--interface", figure])
    assert code == 2 and "not migrated" in err and err.count("\n") == 1
    other = tmp_path / "other.db"
    legacy_ledger(other, fingerprint="d" * 64)  # bound to another interface already
    code, out, err = run_cli(["ledger", "migrate", str(other), "--interface", figure])
    assert code == 2 and "a different interface" in err and err.count("\n") == 1
    raw = sqlite3.connect(other)
    assert raw.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("1",)  # untouched
    raw.close()


# ----------------------------------------------------------------------- view order


def _permuted(interface: Any, order: tuple[int, ...]) -> Any:
    vocabularies = tuple(
        attrs.evolve(v, views=tuple(v.views[i % len(v.views)] for i in order[: len(v.views)]))
        if len(v.views) == len(order)
        else attrs.evolve(v, views=tuple(reversed(v.views)))
        for v in interface.vocabularies
    )
    return attrs.evolve(interface, vocabularies=vocabularies)


def test_view_order_never_changes_the_fingerprint_or_the_distribution_under_the_em() -> None:
    loaded = load_interface_file(ROOT / "examples" / "figure2.toml")
    interface = loaded.interface
    base = interface_fingerprint(interface)
    width = max(len(v.views) for v in interface.vocabularies)
    for order in itertools.islice(itertools.permutations(range(width)), 1, 6):
        permuted = _permuted(interface, order)
        assert [v.names for v in permuted.vocabularies] != [v.names for v in interface.vocabularies]
        assert interface_fingerprint(permuted) == base
        for query in interface.queries:  # the EM's probability of each view name is the same
            a = begin_turn(interface, InterfaceState.initial(interface), query, loaded.store("M")).plan()
            b = begin_turn(permuted, InterfaceState.initial(permuted), query, loaded.store("M")).plan()
            pa = dict(zip(a.distribution.views, a.distribution.probabilities(), strict=True))
            pb = dict(zip(b.distribution.views, b.distribution.probabilities(), strict=True))
            assert pa.keys() == pb.keys() and all(abs(pa[k] - pb[k]) < 1e-30 for k in pa)


def test_view_order_is_kept_where_the_selector_reads_it() -> None:
    data = copy.deepcopy(BASE)
    interface = interface_from_dict(data).interface
    argmax = attrs.evolve(interface, selector=ArgmaxSelector())
    assert interface_fingerprint(_permuted(argmax, (1, 0))) != interface_fingerprint(argmax)
    assert interface_fingerprint(_permuted(interface, (1, 0))) == interface_fingerprint(interface)



def _postgres_legacy_ledger(queries: tuple[str, ...]) -> tuple[str, Any]:
    """A PostgreSQL ledger with Figure 2's turns `queries`, then left as the old main left it (no
    chain, schema 1, no fingerprint); its URL and the loaded interface."""
    import psycopg

    import tests.postgres_server as postgres_server

    url = postgres_server.new_database()
    loaded = load_interface_file(ROOT / "examples" / "figure2.toml")
    ledger_store = open_ledger_store(url)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "chat", loaded.store("M"), SeededRandomSource(0), turn_deadline_s=None
    )
    for query in queries:
        session.run_turn(query)
    ledger_store.close()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("DROP TABLE dpmem_chain")
        connection.execute("UPDATE dpmem_meta SET value = '1' WHERE key = 'schema'")
        connection.execute("DELETE FROM dpmem_meta WHERE key = 'fingerprint'")
    return url, loaded


def test_postgres_legacy_ledger_is_refused_then_migrated() -> None:
    import tests.postgres_server as postgres_server

    url, loaded = _postgres_legacy_ledger(("affordable-dinner", "checkup-reminder"))
    figure = ROOT / "examples" / "figure2.toml"
    with pytest.raises(LedgerStoreError, match="dpmem ledger migrate postgresql://") as refused:
        open_ledger_store(url)
    assert postgres_server.PASSWORD not in str(refused.value)
    code, out, err = run_cli(["ledger", "migrate", url, "--interface", str(figure)])
    assert code == 0 and "migrated: ledger" in out and postgres_server.PASSWORD not in out + err, (out, err)
    ledger_store = open_ledger_store(url)
    resumed = DurableSession.open(loaded.interface, ledger_store, "user", "chat", loaded.store("M"), SeededRandomSource(1))
    assert len(resumed.state().history) == 2
    with pytest.raises(InputError, match="a different interface"):
        session_of_base = interface_from_dict(BASE)
        DurableSession.open(session_of_base.interface, ledger_store, "user", "x", session_of_base.store("M"), SeededRandomSource(0))
    ledger_store.close()
    assert run_cli(["ledger", "verify", url])[0] == 0


def test_postgres_a_legacy_record_the_chain_cannot_vouch_for_refuses_the_migration_with_nothing_written() -> None:
    """The migration replays what it would commit inside its transaction: a legacy turn record
    with text verify refuses (a no-break space) is refused in one line naming the row, and
    the server's tables are as they were (no chain table, schema 1, no fingerprint)."""
    import psycopg

    import tests.postgres_server as postgres_server

    url, loaded = _postgres_legacy_ledger(("affordable-dinner",))
    with psycopg.connect(url, autocommit=True) as connection:  # one corrupted record
        # a no-break space in the (free) response text: valid JSON, valid UTF-8, but not printable
        connection.execute("""UPDATE dpmem_turns SET record = replace(record, '"response":""', '"response":"' || chr(160) || '"')""")
        before = {table: connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                  for table in ("dpmem_meta", "dpmem_ledgers", "dpmem_releases", "dpmem_turns")}
    with pytest.raises(LedgerStoreError) as refused:
        migrate_postgres(url, interface_fingerprint(loaded.interface), routes=Routes.of(loaded.interface))
    assert str(refused.value).endswith(": not migrated, the migrated rows do not verify: turns seq 1: unreadable text")
    assert postgres_server.PASSWORD not in str(refused.value)
    with psycopg.connect(url, autocommit=True) as connection:
        after = {table: connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in before}
        chain = connection.execute("SELECT to_regclass('dpmem_chain')").fetchone()
    assert after == before and chain == (None,)


def test_a_genuine_pre_chain_file_is_named_as_such_by_verify(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    legacy_ledger(path)
    code, out, _ = run_cli(["ledger", "verify", str(path)])
    assert code == 1 and "written before the tamper-evident chain (schema 1)" in out and "foreign" not in out, out
    assert "dpmem ledger migrate" in out
    assert verify_sqlite(path).problem == (
        "a ledger written before the tamper-evident chain (schema 1): bind and chain it once with "
        "dpmem ledger migrate DB --interface FILE"
    )


def test_a_pre_chain_file_with_its_four_tables_and_no_other_is_named_as_such_and_migrates(tmp_path: Path) -> None:
    """Tables declared without AUTOINCREMENT: SQLite keeps no `sqlite_sequence` table, so the
    file holds meta, ledgers, releases and turns and nothing else, a genuine schema-1 ledger
    all the same: verify advises the migration, and the migration chains it."""
    path = tmp_path / "l.db"
    legacy_ledger(path, schema=LEGACY_SCHEMA.replace(" AUTOINCREMENT", ""))
    raw = sqlite3.connect(path)
    tables = sorted(name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    raw.close()
    assert tables == ["ledgers", "meta", "releases", "turns"]
    assert verify_sqlite(path).problem == (
        "a ledger written before the tamper-evident chain (schema 1): bind and chain it once with "
        "dpmem ledger migrate DB --interface FILE"
    )
    run = run_cli(["ledger", "migrate", str(path), "--interface", str(ROOT / "examples" / "figure2.toml")])
    assert run[0] == 0, run
    report = verify_sqlite(path)
    assert report.ok and report.chain is not None and report.chain.migrated and report.releases == 2, report.line()


@pytest.mark.parametrize("tamper", ["DROP TABLE chain", "DELETE FROM chain"])
def test_a_dropped_chain_is_tampering_and_never_advised_to_migrate(tamper: str, tmp_path: Path) -> None:
    """Verify's advice never names a command that resets a budget: migrate would re-chain the
    tampered rows (here: a budget reset by hand) and the caps would be spendable again."""
    path = tmp_path / "l.db"
    session(BASE, path).run_turn("dinner")
    raw = sqlite3.connect(path)
    raw.execute(tamper)
    raw.execute("UPDATE ledgers SET spent = '0/1'")
    raw.execute("DELETE FROM meta WHERE key = 'fingerprint'")  # and made to look unbound
    raw.commit()
    raw.close()
    code, out, _ = run_cli(["ledger", "verify", str(path)])
    assert code == 1 and "tampered" in out and "migrate" not in out, out
    if tamper == "DROP TABLE chain":
        assert verify_sqlite(path).problem == (
            "the chain table is missing (dropped: tampered); put the newest verified backup back with "
            "dpmem ledger restore BACKUP DB"
        )
    code, out, err = run_cli(["ledger", "migrate", str(path), "--interface", str(ROOT / "examples" / "figure2.toml")])
    assert code == 2 and "not migrated" in err and "tampered" in err and err.count("\n") == 1, (code, out, err)
    with pytest.raises(LedgerStoreError) as refused:
        session(BASE, path)
    assert "migrate" not in str(refused.value)


def test_postgres_a_dropped_chain_is_tampering_and_never_advised_to_migrate(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("psycopg")
    import tests.postgres_server as postgres_server

    url = postgres_server.new_database()
    loaded = interface_from_dict(BASE)
    ledger_store = open_ledger_store(url)
    DurableSession.open(
        loaded.interface, ledger_store, "user", "chat", loaded.store("M"), SeededRandomSource(0), turn_deadline_s=None
    ).run_turn("dinner")
    ledger_store.close()
    postgres_server.admin_execute(url, "DROP TABLE dpmem_chain")
    postgres_server.admin_execute(url, "DELETE FROM dpmem_meta WHERE key = 'fingerprint'")
    code, out, _ = run_cli(["ledger", "verify", url])
    assert code == 1 and "tampered" in out and "migrate" not in out, out
    code, out, err = run_cli(["ledger", "migrate", url, "--interface", str(ROOT / "examples" / "figure2.toml")])
    assert code == 2 and "tampered" in err and err.count("\n") == 1, (code, out, err)


POSTGRES_KEY = ChainKey(secret=b"postgres-migration-key-0123456789abcdef", keyed=True)  # not the environment's


def _postgres_unbound_ledger() -> tuple[str, str]:
    """A chained PostgreSQL ledger (under POSTGRES_KEY) whose session user/chat was opened and
    charged for BASE's read of slot food without an interface fingerprint: its URL and identity."""
    import tests.postgres_server as postgres_server
    from dpmem_ref.ledger.postgres import PostgresLedgerStore

    url = postgres_server.new_database()
    interface = interface_from_dict(BASE).interface
    ledger_store = PostgresLedgerStore(url, key=POSTGRES_KEY)
    try:
        session = ledger_store.open_session("user", "chat", interface.caps)
        _, eps = Routes.of(interface).by_query[("dinner", "food")]
        session.charge_and_record(
            ReleaseRequest("a1", "b1", 0, "food", "low-glycemic", "balanced", frozenset({"diabetes"}), eps)
        )
        return url, ledger_store.identity
    finally:
        ledger_store.close()


def test_postgres_migration_binds_under_the_given_key_and_overwrites_the_anchor_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Under DPMEM_LEDGER_ANCHOR_DIR the migrated head is written to the database's anchor file,
    over what was there (here an anchor the key cannot read: sealed with another key), and
    the migration and its verification use the key given, not the environment's."""
    from dpmem_ref.ledger.anchor import read_anchor, write_anchor
    from dpmem_ref.ledger.postgres.verify import verify_postgres

    monkeypatch.setenv("DPMEM_LEDGER_ANCHOR_DIR", str(tmp_path))
    url, identity = _postgres_unbound_ledger()
    anchor = tmp_path / f"{identity}.anchor"
    opened = read_anchor(anchor, POSTGRES_KEY, identity)
    assert opened is not None and opened.seq == 3  # genesis, open, charge
    write_anchor(anchor, key_from_environment(), identity, opened, force=True)
    interface = interface_from_dict(BASE).interface
    fingerprint = interface_fingerprint(interface)
    report = migrate_postgres(url, fingerprint, key=POSTGRES_KEY, routes=Routes.of(interface))
    assert (report.ok, report.problem, report.fingerprint, report.releases) == (True, None, fingerprint, 1)
    assert report.high_water is not None and report.high_water.seq == 4  # the migrate event
    assert read_anchor(anchor, POSTGRES_KEY, identity) == report.high_water
    assert verify_postgres(url, POSTGRES_KEY) == report
    assert verify_postgres(url).problem is not None  # the environment's key cannot vouch for the chain


def test_postgres_migration_replays_the_charges_against_the_named_interface() -> None:
    """Equal caps do not bind: a charge the named interface could not have made (BASE's
    read of slot food charges diabetes; the groups-swapped variant's charges debt) is refused
    in one line naming the database and the row, and nothing is bound."""
    import psycopg

    import tests.postgres_server as postgres_server

    url, _ = _postgres_unbound_ledger()
    interface = interface_from_dict(SWAPPED).interface
    _, eps = Routes.of(interface).by_query[("dinner", "food")]
    with pytest.raises(LedgerStoreError) as refused:
        migrate_postgres(url, interface_fingerprint(interface), key=POSTGRES_KEY, routes=Routes.of(interface))
    assert str(refused.value) == (
        f"ledger database {postgres_server.shown(url)}: not migrated, its rows are inconsistent: releases seq 1: charge set "
        f"['diabetes'] at eps {eps} is no read of slot food in the named interface"
    )
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT key FROM dpmem_meta ORDER BY key").fetchall() == [("schema",)]


def test_postgres_migration_a_server_that_refuses_the_login_is_one_line_naming_the_database() -> None:
    import tests.postgres_server as postgres_server

    url = postgres_server.url(postgres_server.SHARED, password="wrong")
    postgres_server.new_database()  # the server and the shared database exist
    with pytest.raises(LedgerStoreError) as refused:
        migrate_postgres(url, interface_fingerprint(interface_from_dict(BASE).interface), key=POSTGRES_KEY)
    assert str(refused.value) == (
        f"ledger database postgresql://{postgres_server.ROLE}:***@/{postgres_server.SHARED}"
        f"?host={postgres_server.socket_dir()}: authentication failed (wrong user or password)"
    )


class ServerTables:
    """A stand-in for the server connection `migrate_rows` is given on PostgreSQL: SQLite holding
    the server's `dpmem_*` tables only, `%s` placeholders. A statement that names a table the
    adapter did not rename fails here, as it fails on the server."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.executescript(POSTGRES_SCHEMA)

    def execute(self, text: str, params: Any = ()) -> sqlite3.Cursor:
        return self.db.execute(text.replace("%s", "?"), params)


def test_every_migration_statement_is_spelled_for_the_servers_renamed_tables() -> None:
    """The migration is one body of SQL for both backends; spelled by the server adapter
    (`meta` -> `dpmem_meta`, ...), a legacy ledger there is bound, chained and set to schema 2."""
    server = ServerTables()
    server.execute("INSERT INTO dpmem_meta VALUES ('schema', '1')")
    for attribute, spent, cap in [("diabetes", "4/3", "2/1"), ("debt", "4/3", "8/1")]:  # Figure 2's caps
        server.execute("INSERT INTO dpmem_ledgers VALUES ('user', 'chat', %s, %s, %s)", (attribute, spent, cap))
    for n in range(2):
        server.execute(
            "INSERT INTO dpmem_releases VALUES (%s, 'user', 'chat', %s, %s, 0, 'food', 'low-glycemic', 1, %s, '2/3')",
            (n + 1, f"{n}a", f"{n}b", json.dumps(["debt", "diabetes"])),
        )
    key = key_from_environment()
    figure = load_interface_file(ROOT / "examples" / "figure2.toml").interface
    fingerprint = interface_fingerprint(figure)
    head = migrate_rows(_postgres_sql(server, key), "server", fingerprint, key, Routes.of(figure))  # type: ignore[arg-type]
    meta = dict(server.execute("SELECT key, value FROM dpmem_meta").fetchall())
    assert meta == {"schema": "2", "fingerprint": fingerprint}
    chain = tuple(server.execute("SELECT seq, kind, body, mac FROM dpmem_chain ORDER BY seq").fetchall())
    assert [kind for _, kind, _, _ in chain] == ["genesis", "migrate", "open", "charge", "charge"]
    assert head == HighWater(5, chain[-1][3])

    def rows(sql: str) -> tuple[tuple[object, ...], ...]:
        return tuple(server.execute(sql).fetchall())

    replayed = replay(
        LedgerRows(
            meta=rows("SELECT key, value FROM dpmem_meta"),
            chain=chain,
            ledgers=rows("SELECT user_name, interaction, attribute, spent, cap FROM dpmem_ledgers"),
            releases=rows(
                "SELECT user_name, interaction, seq, release_id, turn_id, slot_index, slot, view, admitted, "
                "charge_set, epsilon FROM dpmem_releases ORDER BY seq"
            ),
            turns=rows("SELECT user_name, interaction, seq, turn_id, record FROM dpmem_turns ORDER BY seq"),
        ),
        key,
        head,
    )
    assert (replayed.problem, replayed.fingerprint, replayed.migrated) == (None, fingerprint, True)
    assert (replayed.events, replayed.sessions, replayed.releases, replayed.turns) == (5, 1, 2, 0)


def test_a_server_ledger_of_schema_2_without_its_chain_is_refused_as_tampering() -> None:
    """The server spelling of the check that a schema-2 ledger has rows but no chain: refused,
    nothing appended."""
    server = ServerTables()
    server.execute("INSERT INTO dpmem_meta VALUES ('schema', '2')")
    server.execute("INSERT INTO dpmem_ledgers VALUES ('user', 'chat', 'diabetes', '0/1', '2/1')")
    key = key_from_environment()
    figure = load_interface_file(ROOT / "examples" / "figure2.toml").interface
    with pytest.raises(LedgerStoreError) as refused:
        migrate_rows(_postgres_sql(server, key), "server", interface_fingerprint(figure), key, Routes.of(figure))  # type: ignore[arg-type]
    assert str(refused.value) == (
        "ledger database server: not migrated, a schema-2 ledger without its chain was tampered with (its chain "
        "dropped or emptied); put the newest verified backup back with dpmem ledger restore"
    )
    assert server.execute("SELECT count(*) FROM dpmem_chain").fetchall() == [(0,)]
