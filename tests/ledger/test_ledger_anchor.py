"""Rollback protection that fails closed (docs/durability.md, "Threat model").

An attacker who can write the ledger database (and, in the default placement, the anchor
beside it) but does not hold the key deletes, replaces, truncates, splices and rewinds;
each defended combination is refused on open, or the next commit is refused, before any
release. One test per undefended combination shows the documented behaviour (it opens).
Every case runs on SQLite and PostgreSQL, with the anchor in its default place (`DB.hwm`,
the `dpmem_anchor` row) and under `DPMEM_LEDGER_ANCHOR_DIR`.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_ledger_concurrency import ONE_SLOT

import tests.postgres_server as postgres_server
from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.ledger import LedgerStoreError, open_ledger_store
from dpmem_ref.ledger.anchor import BACKUP, anchor_text, read_anchor, write_anchor
from dpmem_ref.ledger.chain import HighWater, key_from_environment
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession
from tests.kernel_fixtures import run_cli
from tests.ledger_fixtures import chain_key_fixture, sqlite_statement

KEY = "anchor-test-key-0123456789abcdef"
KINDS = ["sqlite", "sqlite+anchor-dir", "postgres", "postgres+anchor-dir"]
TABLES = ("meta", "ledgers", "releases", "turns", "chain", "checkpoint")


_chain_key = chain_key_fixture(KEY)


class Ledger:
    """One ledger database and the attacker's plain access to it (no key)."""

    def __init__(self, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "l") -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        if kind.endswith("+anchor-dir"):
            folder = tmp_path / "anchors"
            folder.mkdir(exist_ok=True)
            monkeypatch.setenv("DPMEM_LEDGER_ANCHOR_DIR", str(folder))
        if kind.startswith("postgres"):
            self.url = postgres_server.new_database()
        else:
            self.path = tmp_path / f"{name}.db"
            self.url = str(self.path)

    @property
    def postgres(self) -> bool:
        return self.kind.startswith("postgres")

    def admitted(self, turns: int) -> int:
        """Charged selections admitted in `turns` turns (B = 2, eps = 2/3: at most 3 ever)."""
        loaded = interface_from_dict(ONE_SLOT)
        ledger_store = open_ledger_store(self.url)
        try:
            session = DurableSession.open(
                loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(1),
                turn_deadline_s=None,
            )  # fmt: skip
            return sum(sum(session.run_turn("dinner").record.admitted) for _ in range(turns))
        finally:
            ledger_store.close()

    def execute(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            import psycopg

            spelled = statement.replace("?", "%s")
            for table in TABLES + ("anchor",):
                spelled = spelled.replace(f" {table} ", f" dpmem_{table} ").replace(f" {table}", f" dpmem_{table}")
            with psycopg.connect(self.url, autocommit=True) as connection:
                cursor = connection.execute(spelled, params)
                return [tuple(r) for r in cursor.fetchall()] if cursor.description else []
        return sqlite_statement(self.path, statement, params)

    def anchor_dir(self) -> Path | None:
        return self.tmp_path / "anchors" if self.kind.endswith("+anchor-dir") else None

    # what the attacker copies: the database, and the anchor where it can reach it
    def snapshot(self) -> dict[str, Any]:
        saved: dict[str, Any] = {}
        if self.postgres:
            saved["tables"] = {t: self.execute(f"SELECT * FROM {t}") for t in TABLES + ("anchor",)}
        else:
            copy = self.tmp_path / f"snapshot-{len(list(self.tmp_path.iterdir()))}.db"
            source, target = sqlite3.connect(self.path), sqlite3.connect(copy)
            source.backup(target)
            source.close()
            target.close()
            saved["file"] = copy
            beside = Path(f"{self.path}.hwm")
            saved["hwm"] = beside.read_bytes() if beside.exists() else None
        folder = self.anchor_dir()
        if folder is not None:
            saved["dir"] = {p.name: p.read_bytes() for p in folder.iterdir()}
        return saved

    def rewind_database(self, saved: dict[str, Any], with_anchor: bool = False) -> None:
        """Put the snapshot's rows back in place (under any open connection's feet); the
        anchor too when `with_anchor` (the attacker reaches it: its default placement) ."""
        if self.postgres:
            tables = TABLES + (("anchor",) if with_anchor else ())
            for table in tables:
                self.execute(f"DELETE FROM {table}")
                for row in saved["tables"][table]:
                    self.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
        else:
            source, target = sqlite3.connect(saved["file"]), sqlite3.connect(self.path)
            source.backup(target)  # the file's contents replaced, as a copy-back would
            source.close()
            target.close()
            if with_anchor and saved["hwm"] is not None:
                Path(f"{self.path}.hwm").write_bytes(saved["hwm"])
        folder = self.anchor_dir()
        if with_anchor and folder is not None:
            for name, data in saved["dir"].items():
                (folder / name).write_bytes(data)

    def delete_anchor(self) -> None:
        folder = self.anchor_dir()
        if folder is not None:
            for path in folder.iterdir():
                path.unlink()
        elif self.postgres:
            self.execute("DELETE FROM anchor")
        else:
            Path(f"{self.path}.hwm").unlink()

    def anchor_raw(self) -> bytes:
        folder = self.anchor_dir()
        if folder is not None:
            return next(folder.iterdir()).read_bytes()
        if self.postgres:
            return str(self.execute("SELECT body FROM anchor")[0][0]).encode()
        return Path(f"{self.path}.hwm").read_bytes()

    def set_anchor(self, raw: bytes) -> None:
        folder = self.anchor_dir()
        if folder is not None:
            targets = list(folder.iterdir())
            assert len(targets) == 1
            targets[0].write_bytes(raw)
        elif self.postgres:
            self.execute("UPDATE anchor SET body = ?", (raw.decode("utf-8", "replace").strip(),))
        else:
            Path(f"{self.path}.hwm").write_bytes(raw)

    def refused(self, words: str) -> str:
        with pytest.raises(LedgerStoreError) as refused:
            open_ledger_store(self.url).close()
        message = str(refused.value)
        assert words in message and "\n" not in message, message
        return message

    def released(self) -> int:
        return len(self.execute("SELECT seq FROM releases"))


@pytest.fixture(params=KINDS)
def ledger(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    return Ledger(request.param, tmp_path, monkeypatch)


# ------------------------------------------------------------------ defended: refused


def test_a_rewound_database_is_refused_on_open_before_any_release(ledger: Ledger) -> None:
    assert ledger.admitted(2) == 2
    old = ledger.snapshot()
    assert ledger.admitted(2) == 1  # the budget admits 3 in all
    ledger.rewind_database(old)  # the older copy put back, the anchor kept
    released = ledger.released()
    ledger.refused("does not reach its high-water mark")
    with pytest.raises(LedgerStoreError):
        ledger.admitted(3)
    assert ledger.released() == released  # nothing released on the rewound ledger


def test_a_truncated_chain_tail_is_refused_on_open(ledger: Ledger) -> None:
    assert ledger.admitted(3) == 3
    head = int(ledger.execute("SELECT MAX(seq) FROM chain")[0][0])
    ledger.execute("DELETE FROM chain WHERE seq > ?", (head - 2,))
    ledger.refused("does not reach its high-water mark")


def test_a_database_rewound_while_a_store_runs_refuses_its_next_commit(ledger: Ledger) -> None:
    """The issue's regrowth attack: truncated under a running store, the chain must not
    regrow past the old mark; the next charge is refused before its release."""
    assert ledger.admitted(1) == 1
    old = ledger.snapshot()
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = open_ledger_store(ledger.url)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(1), turn_deadline_s=None
    )
    assert sum(session.run_turn("dinner").record.admitted) == 1
    ledger.rewind_database(old)
    released = ledger.released()
    for _ in range(4):  # every later turn, not only the first, is refused
        with pytest.raises(LedgerStoreError, match="does not reach its high-water mark"):
            session.run_turn("dinner")
    ledger_store.close()
    assert ledger.released() == released
    ledger.refused("does not reach its high-water mark")


@pytest.mark.parametrize("kind", ["sqlite", "sqlite+anchor-dir"])
def test_a_sqlite_database_rewound_under_its_store_refuses_the_charge_naming_it_and_its_anchor(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit's refusal is one whole line: the database, the anchor file whose event the
    chain no longer holds, that event's seq, and the restore that puts it right."""
    from dpmem_ref.ledger.facts import ReleaseRequest

    ledger = Ledger(kind, tmp_path, monkeypatch)
    ledger_store = open_ledger_store(ledger.url)
    try:
        session = ledger_store.open_session("u", "i", {"a": Fraction(1)})
        old = ledger.snapshot()
        session.charge_and_record(
            ReleaseRequest("a1", "b1", 0, "s", "low", "generic", frozenset({"a"}), Fraction(1, 3))
        )
        head = int(ledger.execute("SELECT MAX(seq) FROM chain")[0][0])
        ledger.rewind_database(old)
        folder = ledger.anchor_dir()
        anchor = Path(f"{ledger.path}.hwm") if folder is None else next(folder.iterdir())
        with pytest.raises(LedgerStoreError) as refused:
            session.charge_and_record(
                ReleaseRequest("a2", "b2", 0, "s", "low", "generic", frozenset({"a"}), Fraction(1, 3))
            )
    finally:
        ledger_store.close()
    assert str(refused.value) == (
        f"ledger database {ledger.path}: its chain does not reach its high-water mark (the event of anchor {anchor}, "
        f"seq {head}): rewound, truncated or forked; put the newest backup back with dpmem ledger restore BACKUP "
        f"{ledger.path} (--allow-rollback restores an older one, recorded)"
    )
    assert ledger.released() == 0


def test_a_deleted_anchor_is_refused_and_the_recorded_reanchor_recovers(ledger: Ledger) -> None:
    assert ledger.admitted(2) == 2
    ledger.delete_anchor()
    message = ledger.refused("is missing")
    assert "dpmem ledger reanchor" in message
    code, out, err = run_cli(["ledger", "verify", ledger.url])
    assert code == 1 and "anchor" in out and "missing" in out, (out, err)
    code, out, err = run_cli(["ledger", "reanchor", ledger.url])
    assert code == 0 and "re-anchored" in out and "re-anchored at chain seq" in out, (out, err)
    assert ledger.admitted(3) == 1  # the budget continues where the chain says it is
    code, out, err = run_cli(["ledger", "verify", ledger.url])
    assert code == 0 and "re-anchored at chain seq" in out, (out, err)  # reported on every verify
    code, out, err = run_cli(["ledger", "reanchor", ledger.url])  # an intact anchor needs nothing
    assert code == 2 and "nothing to re-anchor" in err


def test_a_missing_anchor_is_refused_from_the_first_event_after_the_genesis(tmp_path: Path) -> None:
    """Only a chain that is its genesis alone has nothing an anchor could miss: one event more
    (here a session opened, seq 2) and a deleted anchor is refused like any other."""
    fresh, opened = tmp_path / "fresh.db", tmp_path / "opened.db"
    open_ledger_store(str(fresh)).close()
    ledger_store = open_ledger_store(str(opened))
    ledger_store.open_session("user", "chat", {"diabetes": 2})
    ledger_store.close()
    for path in (fresh, opened):
        Path(f"{path}.hwm").unlink()
    open_ledger_store(str(fresh)).close()  # the genesis alone (seq 1): opens
    connection = sqlite3.connect(opened)
    assert connection.execute("SELECT MAX(seq) FROM chain").fetchone() == (2,)
    connection.close()
    with pytest.raises(LedgerStoreError) as refused:
        open_ledger_store(str(opened))
    assert str(refused.value) == (
        f"ledger database {opened}: its anchor {opened}.hwm is missing, so a truncated or older copy would go "
        f"unnoticed; if this is the live database, re-anchor it (recorded in its chain): dpmem ledger reanchor {opened}"
    )


def test_a_deleted_anchor_while_a_store_runs_refuses_the_next_commit(ledger: Ledger) -> None:
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = open_ledger_store(ledger.url)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(1), turn_deadline_s=None
    )
    assert sum(session.run_turn("dinner").record.admitted) == 1
    ledger.delete_anchor()
    released = ledger.released()
    with pytest.raises(LedgerStoreError, match="anchor"):
        session.run_turn("dinner")
    ledger_store.close()
    assert ledger.released() == released


def test_another_ledgers_anchor_under_the_same_key_is_refused(
    ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Ledger(ledger.kind, tmp_path, monkeypatch, name="other")
    assert other.admitted(3) == 3  # the same key, the same history: only the identity differs
    foreign = other.anchor_raw()
    assert ledger.admitted(1) == 1
    if ledger.anchor_dir() is not None:  # both anchors live in one folder: swap contents
        files = sorted(p for p in (tmp_path / "anchors").iterdir())
        own = next(p for p in files if p.read_bytes() != foreign)
        own.write_bytes(foreign)
    else:
        ledger.set_anchor(foreign)
    ledger.refused("belongs to another database")


@pytest.mark.parametrize("edit", ["seq", "mac", "role", "database_id", "other key", "garbage"])
def test_an_edited_or_reforged_anchor_is_refused(ledger: Ledger, edit: str) -> None:
    assert ledger.admitted(2) == 2
    data = json.loads(ledger.anchor_raw().decode())
    if edit == "seq":
        data["seq"] += 5
    elif edit == "mac":
        data["mac"] = "0" * 64
    elif edit == "role":
        data["role"] = BACKUP
    elif edit == "database_id":
        data["database_id"] = "f" * 32
    if edit == "other key":
        from dpmem_ref.ledger.chain import ChainKey

        other = ChainKey(secret=b"another-key-0123456789abcdef", keyed=True)
        raw = anchor_text(other, data["database_id"], data["role"], HighWater(data["seq"], data["mac"])).encode()
    elif edit == "garbage":
        raw = b"\xff\xfe not an anchor"
    else:
        raw = json.dumps(data).encode()
    ledger.set_anchor(raw.ljust(512) if not ledger.postgres or ledger.anchor_dir() else raw)
    message = ledger.refused("anchor")
    assert "refused" in message and "Traceback" not in message


def test_a_backup_copied_in_place_with_its_own_anchor_is_refused(tmp_path: Path) -> None:
    live = Ledger("sqlite", tmp_path, pytest.MonkeyPatch())
    assert live.admitted(2) == 2
    assert run_cli(["ledger", "backup", live.url, str(tmp_path / "b.db")])[0] == 0
    assert live.admitted(2) == 1
    shutil.copyfile(tmp_path / "b.db", live.path)  # the attack: an older backup with its own .hwm
    shutil.copyfile(tmp_path / "b.db.hwm", f"{live.path}.hwm")
    Path(f"{live.path}-wal").unlink(missing_ok=True)
    live.refused("a backup anchor")


def test_an_event_spliced_from_another_ledger_under_the_same_key_is_refused(
    ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Ledger(ledger.kind, tmp_path, monkeypatch, name="other")
    assert ledger.admitted(2) == 2 and other.admitted(2) == 2  # same key, same interface, same turns
    for seq in (1, 3, 5):
        kind, body, mac = other.execute("SELECT kind, body, mac FROM chain WHERE seq = ?", (seq,))[0]
        saved = ledger.execute("SELECT kind, body, mac FROM chain WHERE seq = ?", (seq,))[0]
        ledger.execute("UPDATE chain SET kind = ?, body = ?, mac = ? WHERE seq = ?", (kind, body, mac, seq))
        ledger.execute("DELETE FROM checkpoint")  # no help from a stale checkpoint either way
        ledger.refused("ledger database")  # the MAC walk, or (a spliced genesis) the anchor refuses it
        code, out, _ = run_cli(["ledger", "verify", ledger.url])
        assert code == 1 and "chain seq" in out
        ledger.execute("UPDATE chain SET kind = ?, body = ?, mac = ? WHERE seq = ?", (*saved, seq))
    assert ledger.admitted(2) == 1  # restored: it opens, and the budget is where it was


def test_an_edited_ledger_row_is_never_served(ledger: Ledger) -> None:
    assert ledger.admitted(3) == 3
    ledger.execute("UPDATE ledgers SET spent = '0/1'")  # the budget reset by hand
    ledger.refused("verification on open failed: ledgers row")
    with pytest.raises(LedgerStoreError):
        ledger.admitted(3)
    assert ledger.released() == 3


def test_the_cli_refuses_in_one_line_and_releases_nothing(ledger: Ledger, tmp_path: Path) -> None:
    assert ledger.admitted(2) == 2
    ledger.delete_anchor()
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    figure2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"
    code, out, err = run_cli(
        ["run", str(figure2), "--store", "M", "--queries", str(queries), "--store-url", ledger.url]
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and "reanchor" in err, (code, out, err)


# ------------------------------------------------------------------ undefended: documented


def test_undefended_rewinding_database_and_anchor_together_opens_and_regrants(ledger: Ledger) -> None:
    """docs/durability.md: an attacker who can write the database AND its anchor rewinds both;
    the ledger opens as a valid shorter one and the charges since are re-granted."""
    assert ledger.admitted(2) == 2
    old = ledger.snapshot()
    assert ledger.admitted(2) == 1
    ledger.rewind_database(old, with_anchor=True)
    assert ledger.admitted(3) == 1  # re-granted: the documented limit of this placement
    code, out, _ = run_cli(["ledger", "verify", ledger.url])
    assert code == 0 and "ok" in out


def test_the_anchor_folder_defends_a_rewind_of_everything_the_database_host_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With DPMEM_LEDGER_ANCHOR_DIR out of reach, rewinding the database with every file
    beside it (its `.hwm` included) is refused."""
    ledger = Ledger("sqlite+anchor-dir", tmp_path, monkeypatch)
    assert ledger.admitted(2) == 2
    old = ledger.snapshot()
    assert ledger.admitted(2) == 1
    ledger.rewind_database(old)  # the database and anything beside it; the folder is not reachable
    ledger.refused("does not reach its high-water mark")


def test_undefended_deleting_database_and_anchor_starts_a_fresh_ledger(ledger: Ledger) -> None:
    assert ledger.admitted(3) == 3
    ledger.delete_anchor()
    for table in TABLES:
        ledger.execute(f"DELETE FROM {table}")
    if ledger.postgres:
        ledger.execute("DELETE FROM anchor")
    assert ledger.admitted(3) == 3  # documented: detect with off-host backups


# ------------------------------------------------------------------ the anchor only moves forward


def _raise_anchor(path: str, identity: str, marks: list[tuple[int, str]], start: Any) -> None:
    start.wait()
    key = key_from_environment()
    for seq, mac in marks:
        write_anchor(Path(path), key, identity, HighWater(seq, mac))


def test_the_anchor_file_is_monotone_under_concurrent_writers(tmp_path: Path) -> None:
    key = key_from_environment()
    path = tmp_path / "x.anchor"
    identity = "a" * 32
    context = multiprocessing.get_context("fork")
    start = context.Event()
    writers = [
        context.Process(target=_raise_anchor, args=(str(path), identity, [(s, f"{s:064x}") for s in order], start))
        for order in (range(1, 200), range(199, 0, -1), range(1, 200, 7), range(150, 0, -3))
    ]
    for writer in writers:
        writer.start()
    start.set()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    assert read_anchor(path, key, identity) == HighWater(199, f"{199:064x}")
    write_anchor(path, key, identity, HighWater(3, f"{3:064x}"))  # a late, lower writer
    assert read_anchor(path, key, identity) == HighWater(199, f"{199:064x}")


def _charge(url: str, seed: int, start: Any) -> None:
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = open_ledger_store(url)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", f"i{seed}", loaded.store("M"), SeededRandomSource(seed),
        turn_deadline_s=None,
    )  # fmt: skip
    start.wait()
    for _ in range(6):
        session.run_turn("dinner")
    ledger_store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "postgres+anchor-dir"])
def test_concurrent_committers_leave_the_anchor_at_the_chain_head(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(kind, tmp_path, monkeypatch)
    ledger.admitted(0)
    context = multiprocessing.get_context("fork")
    start = context.Event()
    workers = [context.Process(target=_charge, args=(ledger.url, seed, start)) for seed in range(4)]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    seq, mac = ledger.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1")[0]
    assert json.loads(ledger.anchor_raw().decode())["seq"] == seq
    assert json.loads(ledger.anchor_raw().decode())["mac"] == mac


@pytest.mark.parametrize("kind", ["sqlite", "sqlite+anchor-dir", "postgres"])
def test_an_anchor_behind_its_database_opens_as_after_a_crash(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash between COMMIT and the anchor write: the chain extends the anchor, so it
    opens, and the next commit raises the anchor to the head again."""
    ledger = Ledger(kind, tmp_path, monkeypatch)
    assert ledger.admitted(1) == 1
    older = ledger.anchor_raw()
    assert ledger.admitted(1) == 1
    ledger.set_anchor(older)
    assert ledger.admitted(1) == 1
    seq, mac = ledger.execute("SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1")[0]
    anchored = json.loads(ledger.anchor_raw().decode())
    assert (anchored["seq"], anchored["mac"]) == (seq, mac)


def _raise_anchor_many(path: str, identity: str, writes: int) -> None:
    from dpmem_ref.ledger.anchor import write_anchor as write
    from dpmem_ref.ledger.chain import ChainKey as Key
    from dpmem_ref.ledger.chain import HighWater as Mark

    key = Key(secret=KEY.encode(), keyed=True)
    for seq in range(1, writes):
        write(Path(path), key, identity, Mark(seq=seq, mac=f"{seq * 7919:064x}"))


def test_a_reader_never_sees_an_anchor_half_rewritten(tmp_path: Path) -> None:
    """Committers rewrite the anchor in place under an exclusive lock; every read (each commit
    checks the anchor) takes a shared one, so a concurrent read never sees half of two seals."""
    import multiprocessing

    from dpmem_ref.ledger.anchor import read_anchor, write_anchor
    from dpmem_ref.ledger.chain import ChainKey, HighWater

    key = ChainKey(secret=KEY.encode(), keyed=True)
    path, identity = tmp_path / "l.db.hwm", "d" * 32
    write_anchor(path, key, identity, HighWater(seq=0, mac="0" * 64))
    writer = multiprocessing.get_context("fork").Process(target=_raise_anchor_many, args=(str(path), identity, 3000))
    writer.start()
    seen = []
    while writer.is_alive():
        mark = read_anchor(path, key, identity)  # a torn read raises: the seal would not match
        assert mark is not None
        seen.append(mark.seq)
    writer.join(timeout=60)
    assert writer.exitcode == 0 and seen == sorted(seen)  # and only ever forward
