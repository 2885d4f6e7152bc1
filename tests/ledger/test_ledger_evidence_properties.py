"""The structure of the evidence, as properties over generated ledgers (SQLite and PostgreSQL).

The edit tests (test_ledger_chain*.py) check that changed rows are caught; these check that
the evidence has the structure the threat model relies on:

- the chain is a chain: an event replaced by the event of another ledger under the same key
  at the same seq (same body, another history) fails verification and is refused on open;
- verify and restore compare the anchor's full seal (seq AND MAC): a forked chain re-extended
  past the mark by a key holder fails verify, is refused on open, and restoring it is a
  rollback;
- every charged event satisfies C3 (eps > 0) and C5 (L_a <= B_a at every prefix) when
  re-derived: verify accepts a key holder's chain exactly when the oracle says so;
- the anchor is monotone under concurrent committers (test_ledger_anchor.py has the
  concurrent writers and committers; here: any order of raises keeps the maximum).
- a stored checkpoint is the state a walk from the genesis reaches at its seq, and an open
  walks on from it, not from the genesis, to what a whole walk reaches.
Each was checked against a planted bug (events sealed without their predecessor; the anchor
compared by seq alone; eps = 0 accepted; the anchor written without the max).
"""

from __future__ import annotations

import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.postgres_server as postgres_server
from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest, SQLiteLedgerStore, open_ledger_store
from dpmem_ref.ledger.anchor import read_anchor, write_anchor
from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.ledger.chain import ChainKey, HighWater, charge_body, key_from_environment, open_body
from dpmem_ref.ledger.checkpoint import Verified, parse_checkpoint
from dpmem_ref.ledger.facts import SessionKey, SlotRelease
from dpmem_ref.ledger.restore import restore_sqlite
from dpmem_ref.ledger.sqlite import schema as sqlite_schema
from dpmem_ref.ledger.sqlite.schema import append_event
from tests.kernel_fixtures import run_cli
from tests.ledger_fixtures import chain_key_fixture

KEY = "evidence-properties-key-0123456789"
CAPS = {"diabetes": Fraction(2), "debt": Fraction(3)}
FINGERPRINT = "e" * 64
OP = st.tuples(
    st.sampled_from(["a", "b"]),
    st.sampled_from([frozenset({"diabetes"}), frozenset({"debt"}), frozenset({"diabetes", "debt"})]),
    st.sampled_from([Fraction(1, 3), Fraction(2, 3), Fraction(1)]),
)
OPS = st.lists(OP, min_size=1, max_size=8)
CHARGES = st.lists(
    st.tuples(st.sampled_from([Fraction(0), Fraction(1, 3), Fraction(1), Fraction(2)]),
              st.sampled_from([Fraction(1), Fraction(2)])),
    min_size=1, max_size=6,
)  # fmt: skip  # (eps, the cap of session n % 2) per charge: C3 and C5 hold or break anywhere
SLOW = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=25)


_chain_key = chain_key_fixture(KEY)


def build(url: str, ops: list[tuple[str, frozenset[str], Fraction]], start: int = 0) -> None:
    """A key holder's ledger: per op, a session (opened once) and one charge request with a
    deterministic id, so two ledgers built from the same ops hold the same event bodies."""
    ledger_store = open_ledger_store(url)
    try:
        for n, (interaction, charge_set, epsilon) in enumerate(ops, start=start):
            session = ledger_store.open_session("u", interaction, CAPS, fingerprint=FINGERPRINT)
            session.charge_and_record(
                ReleaseRequest(f"{n:x}a", f"{n:x}b", 0, "food", "low", "balanced", charge_set, epsilon)
            )
    finally:
        ledger_store.close()  # type: ignore[attr-defined]


def chain_rows(execute: object, url: str) -> list[tuple[object, ...]]:
    return execute(url, "SELECT seq, kind, body, mac FROM {chain} ORDER BY seq")  # type: ignore[operator, no-any-return]


def sqlite_execute(url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(url)
    try:
        rows = connection.execute(statement.format(chain="chain", checkpoint="checkpoint"), params).fetchall()
        connection.commit()
        return rows
    finally:
        connection.close()


def postgres_execute(url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    import psycopg

    spelled = statement.format(chain="dpmem_chain", checkpoint="dpmem_checkpoint").replace("?", "%s")
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(spelled, params)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []


def verify_fails(url: str) -> bool:
    code, out, _ = run_cli(["ledger", "verify", url])
    assert code in (0, 1), out
    return code == 1


# ------------------------------------------------------------------ the chain is a chain


def _splice_case(make: object, execute: object, ops: list[tuple[str, frozenset[str], Fraction]], pick: int) -> None:
    ours, theirs = make(), make()  # type: ignore[operator]
    build(ours, ops)
    build(theirs, ops)  # same key, same ops: equal bodies, another genesis (database identity)
    mine, other = chain_rows(execute, ours), chain_rows(execute, theirs)
    assert [r[2] for r in mine[1:]] == [r[2] for r in other[1:]]  # the bodies agree after the genesis
    seq = 2 + pick % (len(mine) - 1)  # any event after the genesis
    _, kind, body, mac = other[seq - 1]
    execute(ours, "UPDATE {chain} SET kind = ?, body = ?, mac = ? WHERE seq = ?", (kind, body, mac, seq))  # type: ignore[operator]
    execute(ours, "DELETE FROM {checkpoint}")  # type: ignore[operator]
    assert verify_fails(ours), f"event {seq} of another ledger under the same key verified"
    with pytest.raises(LedgerStoreError):
        open_ledger_store(ours)


@SLOW
@given(ops=OPS, pick=st.integers(0, 1000))
def test_sqlite_an_event_from_another_ledger_at_the_same_seq_fails(
    tmp_path: Path, ops: list[tuple[str, frozenset[str], Fraction]], pick: int
) -> None:
    folder = Path(tmp_path) / f"s{abs(hash((tuple(ops), pick)))}"
    folder.mkdir()
    names = iter(("a.db", "b.db"))
    _splice_case(lambda: str(folder / next(names)), sqlite_execute, ops, pick)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=8)
@given(ops=OPS, pick=st.integers(0, 1000))
def test_postgres_an_event_from_another_ledger_at_the_same_seq_fails(
    ops: list[tuple[str, frozenset[str], Fraction]], pick: int
) -> None:
    pytest.importorskip("psycopg")
    _splice_case(postgres_server.new_database, postgres_execute, ops, pick)


# ------------------------------------------------------------------ the anchor's full seal


@SLOW
@given(before=OPS, after=OPS, fork=OPS)
def test_a_fork_re_extended_past_the_anchor_fails_verify_open_and_restore(
    tmp_path: Path,
    before: list[tuple[str, frozenset[str], Fraction]],
    after: list[tuple[str, frozenset[str], Fraction]],
    fork: list[tuple[str, frozenset[str], Fraction]],
) -> None:
    """A key holder forks an old backup and extends it past the live anchor's seq: same seq
    numbers, other MACs. Comparing the anchor by seq alone would accept it."""
    folder = Path(tmp_path) / f"f{abs(hash((tuple(before), tuple(after), tuple(fork))))}"
    folder.mkdir()
    live = folder / "live.db"
    build(str(live), before)
    assert run_cli(["ledger", "backup", str(live), str(folder / "old.db")])[0] == 0
    build(str(live), after, start=100)
    mark = read_anchor(Path(f"{live}.hwm"), key_from_environment(), SQLiteLedgerStore(live).identity)
    assert mark is not None
    forked = folder / "fork.db"
    shutil.copyfile(folder / "old.db", forked)
    assert run_cli(["ledger", "reanchor", str(forked)])[0] == 0  # the fork's own (recorded) anchor
    n = 200
    while int(sqlite_execute(str(forked), "SELECT MAX(seq) FROM {chain}")[0][0]) < mark.seq + 1:
        build(str(forked), fork[: 1 + n % len(fork)], start=n)  # re-extended past the live mark
        n += 10
    assert verify_sqlite(forked).ok
    restore = folder / "fork-as-backup.db"
    shutil.copyfile(forked, restore)
    with pytest.raises(LedgerStoreError, match="older than the high-water mark"):
        restore_sqlite(restore, live)  # a fork is no newer backup: it would re-grant the live charges
    shutil.copyfile(forked, live)  # put in place by hand, the live anchor kept
    Path(f"{live}-wal").unlink(missing_ok=True)
    assert verify_fails(str(live))
    with pytest.raises(LedgerStoreError, match="does not reach its high-water mark"):
        SQLiteLedgerStore(live)


# ------------------------------------------------------------------ C3 and C5, re-derived


def _forged(path: Path, charges: list[tuple[Fraction, Fraction]]) -> None:
    """A key holder writes rows and events directly: per charge (eps, cap) one session's
    release charged to `diabetes`, its ledger the running sum (whatever eps and cap say)."""
    key = key_from_environment()
    ledger_store = SQLiteLedgerStore(path)
    with ledger_store.transaction() as connection:
        for n, (epsilon, cap) in enumerate(charges):
            session = SessionKey(user="u", interaction=f"i{n % 2}")
            caps = {"diabetes": cap}
            if n < 2:
                connection.execute(
                    "INSERT INTO ledgers VALUES (?, ?, 'diabetes', '0/1', ?)",
                    (session.user, session.interaction, f"{cap.numerator}/{cap.denominator}"),
                )
                append_event(connection, key, "open", open_body(session, caps))
            spent = Fraction(
                str(connection.execute("SELECT spent FROM ledgers WHERE interaction = ?", (session.interaction,)).fetchone()[0])
            ) + epsilon
            text = f"{spent.numerator}/{spent.denominator}"
            connection.execute("UPDATE ledgers SET spent = ? WHERE interaction = ?", (text, session.interaction))
            eps_text = f"{epsilon.numerator}/{epsilon.denominator}"
            cursor = connection.execute(
                "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
                "charge_set, epsilon) VALUES (?, ?, ?, ?, 0, 'food', 'low', 1, '[\"diabetes\"]', ?)",
                (session.user, session.interaction, f"{n:x}a", f"{n:x}b", eps_text),
            )
            row = SlotRelease(int(cursor.lastrowid or 0), f"{n:x}a", f"{n:x}b", 0, "food", "low", True,
                              frozenset({"diabetes"}), epsilon)  # fmt: skip
            append_event(connection, key, "charge", charge_body(session, row, {"diabetes": spent}))
        head = connection.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1").fetchone()
    write_anchor(ledger_store.high_water_path, key, ledger_store.identity, HighWater(int(head[0]), str(head[1])))
    ledger_store.close()


@SLOW
@given(charges=CHARGES)
def test_verify_accepts_a_chain_exactly_when_every_charge_keeps_c3_and_c5(
    tmp_path: Path, charges: list[tuple[Fraction, Fraction]]
) -> None:
    folder = Path(tmp_path) / f"c{abs(hash(tuple(charges)))}"
    folder.mkdir()
    path = folder / "l.db"
    _forged(path, charges)
    lawful = _lawful(charges)
    report = verify_sqlite(path)
    assert report.ok == lawful, report.line()
    if not lawful:
        assert "C3" in report.line() or "C5" in report.line(), report.line()


def _forged_postgres(url: str, charges: list[tuple[Fraction, Fraction]]) -> None:
    """`_forged` on PostgreSQL: the same rows and events, the anchor row at the head."""
    from dpmem_ref.ledger.postgres import PostgresLedgerStore
    from dpmem_ref.ledger.postgres.schema import append_event as pg_append
    from dpmem_ref.ledger.postgres.schema import lock_chain, write_anchor_row

    key = key_from_environment()
    ledger_store = PostgresLedgerStore(url)

    def work(connection: object) -> None:
        lock_chain(connection)  # type: ignore[arg-type]
        spent = {0: Fraction(0), 1: Fraction(0)}
        head = None
        for n, (epsilon, cap) in enumerate(charges):
            session = SessionKey(user="u", interaction=f"i{n % 2}")
            if n < 2:
                connection.execute(  # type: ignore[attr-defined]
                    "INSERT INTO dpmem_ledgers VALUES (%s, %s, 'diabetes', '0/1', %s)",
                    (session.user, session.interaction, f"{cap.numerator}/{cap.denominator}"),
                )
                pg_append(connection, key, "open", open_body(session, {"diabetes": cap}))  # type: ignore[arg-type]
            spent[n % 2] += epsilon
            total = spent[n % 2]
            connection.execute(  # type: ignore[attr-defined]
                "UPDATE dpmem_ledgers SET spent = %s WHERE interaction = %s",
                (f"{total.numerator}/{total.denominator}", session.interaction),
            )
            seq = connection.execute(  # type: ignore[attr-defined]
                "INSERT INTO dpmem_releases (user_name, interaction, release_id, turn_id, slot_index, slot, view, "
                "admitted, charge_set, epsilon) VALUES (%s, %s, %s, %s, 0, 'food', 'low', true, '[\"diabetes\"]', %s) "
                "RETURNING seq",
                (session.user, session.interaction, f"{n:x}a", f"{n:x}b", f"{epsilon.numerator}/{epsilon.denominator}"),
            ).fetchone()[0]
            row = SlotRelease(int(seq), f"{n:x}a", f"{n:x}b", 0, "food", "low", True, frozenset({"diabetes"}), epsilon)
            head = pg_append(connection, key, "charge", charge_body(session, row, {"diabetes": total}))  # type: ignore[arg-type]
        assert head is not None
        write_anchor_row(connection, key, ledger_store.identity, head)  # type: ignore[arg-type]

    ledger_store.run(work)  # type: ignore[arg-type]
    ledger_store.close()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=10)
@given(charges=CHARGES)
def test_postgres_verify_accepts_a_chain_exactly_when_every_charge_keeps_c3_and_c5(
    charges: list[tuple[Fraction, Fraction]],
) -> None:
    pytest.importorskip("psycopg")
    from dpmem_ref.ledger.postgres.verify import verify_postgres

    url = postgres_server.new_database()
    _forged_postgres(url, charges)
    report = verify_postgres(url)
    assert report.ok == _lawful(charges), report.line()


def _lawful(charges: list[tuple[Fraction, Fraction]]) -> bool:
    """The oracle: eps > 0 on every charge (C3), each session's running sum <= its cap (C5)."""
    spent = {0: Fraction(0), 1: Fraction(0)}
    lawful = True
    for n, (epsilon, _) in enumerate(charges):
        spent[n % 2] += epsilon
        lawful = lawful and epsilon > 0 and spent[n % 2] <= charges[n % 2][1]
    return lawful


# ------------------------------------------------------------------ the anchor only moves forward


@given(marks=st.lists(st.integers(1, 10_000), min_size=1, max_size=12))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_anchor_keeps_the_highest_mark_in_any_order_of_raises(tmp_path: Path, marks: list[int]) -> None:
    key = ChainKey(secret=KEY.encode(), keyed=True)
    path = Path(tmp_path) / f"m{abs(hash(tuple(marks)))}.anchor"
    path.unlink(missing_ok=True)
    for seq in marks:
        write_anchor(path, key, "b" * 32, HighWater(seq, f"{seq:064x}"))
    assert read_anchor(path, key, "b" * 32) == HighWater(max(marks), f"{max(marks):064x}")


def _checkpoint_case(url: str, connect: Any, schema: Any, table: str, ops: list[tuple[str, frozenset[str], Fraction]],
                     more: list[tuple[str, frozenset[str], Fraction]], monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """An open verifies only the events after the stored checkpoint (O(new events)), so the
    checkpoint must hold exactly the state, row counts, newest seqs and scope digests that a walk
    of the chain from the genesis reaches at its seq; and it must be used: an open reads the
    chain and rows after it, not from the genesis, and reaches what a whole walk reaches."""
    build(url, ops)
    build(url, more, start=len(ops))  # its first commit stores the checkpoint of its open: the head of `ops`
    key = key_from_environment()
    connection = connect(url)
    try:
        stored = connection.execute(f"SELECT body FROM {table} WHERE id = 1").fetchone()[0]  # noqa: S608
        ident = schema.identity(connection)
        checkpoint = parse_checkpoint(key, ident, stored)
        assert checkpoint is not None  # sealed by this key for this database, and readable
        assert checkpoint.seq > 1  # past the genesis: an open has something to skip
        chain, releases, turns = schema.read_tail(connection, 0, 0, 0)
        newest = checkpoint.data["newest"]
        to_checkpoint = Verified.genesis()
        to_checkpoint.advance(
            key,
            tuple(row for row in chain if int(row[0]) <= checkpoint.seq),
            tuple(row for row in releases if int(row[2]) <= newest[0]),
            tuple(row for row in turns if int(row[2]) <= newest[1]),
        )
        assert to_checkpoint.checkpoint() == checkpoint
        assert Verified.restore(checkpoint) == to_checkpoint
        reads: list[tuple[int, ...]] = []
        read_tail = schema.read_tail

        def read(opened: object, *after: int) -> object:
            reads.append(after)
            return read_tail(opened, *after)

        monkeypatch.setattr(schema, "read_tail", read)
        verified, covered = schema.verify_on_open(connection, key, ident)
        assert reads == [(checkpoint.seq, newest[0], newest[1])]
        assert covered is (checkpoint.seq == verified.seq)
        connection.execute(f"DELETE FROM {table}")  # noqa: S608
        walked, covered = schema.verify_on_open(connection, key, ident)
        assert reads[1:] == [(0, 0, 0)] and not covered  # no checkpoint: from the genesis
        assert walked == verified
    finally:
        connection.close()


@SLOW
@given(ops=OPS, more=st.lists(OP, min_size=1, max_size=3))
def test_sqlite_a_checkpoint_is_what_a_walk_from_the_genesis_reaches(tmp_path_factory: pytest.TempPathFactory,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    ops: list[tuple[str, frozenset[str], Fraction]],
                                                                    more: list[tuple[str, frozenset[str], Fraction]]) -> None:  # fmt: skip
    path = str(tmp_path_factory.mktemp("checkpoint") / "l.db")
    _checkpoint_case(path, sqlite3.connect, sqlite_schema, "checkpoint", ops, more, monkeypatch)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=8)
@given(ops=OPS, more=st.lists(OP, min_size=1, max_size=3))
def test_postgres_a_checkpoint_is_what_a_walk_from_the_genesis_reaches(monkeypatch: pytest.MonkeyPatch,
                                                                      ops: list[tuple[str, frozenset[str], Fraction]],
                                                                      more: list[tuple[str, frozenset[str], Fraction]]) -> None:  # fmt: skip
    psycopg = pytest.importorskip("psycopg")
    from dpmem_ref.ledger.postgres import schema as postgres_schema

    url = postgres_server.new_database()
    _checkpoint_case(url, psycopg.connect, postgres_schema, "dpmem_checkpoint", ops, more, monkeypatch)
