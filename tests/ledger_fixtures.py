"""Shared ledger-test helpers (a module, not a conftest: a second `conftest` module name would
shadow eval/tests/conftest.py)."""

from __future__ import annotations

import collections
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.chain import HighWater
from dpmem_ref.ledger.contract import ReleaseRequest
from dpmem_ref.ledger.facts import SessionKey, SessionSnapshot
from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
from dpmem_ref.ledger.sqlite.session import SQLiteLedgerSession


def chain_key_fixture(key: str) -> Callable[..., Iterator[None]]:
    """An autouse fixture for a test module: the chain key `key` from DPMEM_LEDGER_KEY, no key
    file, the anchor in its default place. Assign it at module level: `_chain_key = chain_key_fixture(KEY)`."""

    @pytest.fixture(autouse=True)
    def _chain_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        monkeypatch.setenv("DPMEM_LEDGER_KEY", key)
        monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)
        monkeypatch.delenv("DPMEM_LEDGER_ANCHOR_DIR", raising=False)
        yield

    return _chain_key


def public_key_in_the_test_folder_fixture() -> Callable[..., Iterator[None]]:
    """An autouse fixture for a test module: the environment's chain key is the public development
    key (never the module's own KEY: a test that names its key uses it), no key file, the anchor in
    its default place, and the working folder is the test's tmp_path (error lines name relative
    paths). Assign it at module level: `_public_key = public_key_in_the_test_folder_fixture()`."""

    @pytest.fixture(autouse=True)
    def _public_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        monkeypatch.delenv("DPMEM_LEDGER_KEY", raising=False)
        monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)
        monkeypatch.delenv("DPMEM_LEDGER_ANCHOR_DIR", raising=False)
        monkeypatch.setenv("DPMEM_LEDGER_DEV_KEY", "1")
        monkeypatch.chdir(tmp_path)
        yield

    return _public_key


@pytest.fixture(name="loads")
def count_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[SessionKey]]:
    """Every `load` of a SQLite ledger session, counted by session key (then the real load).
    Import it into a test module to use it as `loads` (`from tests.ledger_fixtures import count_loads`)."""
    counted: collections.Counter[SessionKey] = collections.Counter()
    real = SQLiteLedgerSession.load

    def load(self: SQLiteLedgerSession) -> SessionSnapshot:
        counted[self.key] += 1
        return real(self)

    monkeypatch.setattr(SQLiteLedgerSession, "load", load)
    yield counted


def sqlite_statement(path: str | Path, statement: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
    """One SQL statement on a ledger file, committed, as a raw writer (an attacker, an old main,
    a corrupted disk) would: its rows."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(statement, tuple(params)).fetchall()
        connection.commit()
        return rows
    finally:
        connection.close()


def sqlite_chain_head(path: str | Path) -> HighWater:
    """The newest chain event of a ledger file, read raw (not through the store under test)."""
    [(seq, mac)] = sqlite_statement(path, "SELECT seq, mac FROM chain ORDER BY seq DESC LIMIT 1")
    assert isinstance(seq, int) and isinstance(mac, str)
    return HighWater(seq, mac)


def charge_request(epsilon: Fraction = Fraction(1, 3)) -> ReleaseRequest:
    """A release charged to "diabetes" under fresh release and turn ids."""
    return ReleaseRequest(
        release_id=secrets.token_hex(8),
        turn_id=secrets.token_hex(8),
        index=0,
        slot="food",
        view="a view",
        fallback_view="generic",
        charge_set=frozenset({"diabetes"}),
        epsilon=epsilon,
    )


EMPTY_TURN = TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=())


def small_sqlite_ledger(path: Path, caps: dict[str, Fraction], fingerprint: str | None = None) -> None:
    """A closed SQLite ledger file: ("u", "i") opened with `caps` (bound to `fingerprint` when
    given), charged twice with charge_request (release seqs 1 and 2), then one turn (turn seq 1).
    Its chain: the genesis, the bind (with a fingerprint), the open, two charges, the turn."""
    store = SQLiteLedgerStore(path)
    try:
        session = store.open_session("u", "i", caps, fingerprint=fingerprint)
        session.charge_and_record(charge_request())
        session.charge_and_record(charge_request())
        session.record_turn("0a", EMPTY_TURN)
    finally:
        store.close()


def charge_sqlite_once(
    path: Path, caps: dict[str, Fraction], epsilon: Fraction = Fraction(1, 3), fingerprint: str | None = None
) -> None:
    """Reopen ("u", "i") (the first write after an open stores the checkpoint of what the open
    verified), charge charge_request(epsilon) once, close."""
    store = SQLiteLedgerStore(path)
    try:
        store.open_session("u", "i", caps, fingerprint=fingerprint).charge_and_record(charge_request(epsilon))
    finally:
        store.close()


def save_sqlite_checkpoint(path: Path) -> None:
    """Open (verifying the file), store the checkpoint of what the open verified, close."""
    store = SQLiteLedgerStore(path)
    try:
        store.save_checkpoint()
    finally:
        store.close()


class FakeClock:
    """A store module's `time`: monotonic() reads `now`; each sleep is recorded and moves `now`
    one second on, so a deadline is reached after a known number of tries."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += 1.0


class TopOfRange:
    """A store module's jitter source: records each range it is asked for, answers its top."""

    def __init__(self) -> None:
        self.ranges: list[tuple[float, float]] = []

    def uniform(self, low: float, high: float) -> float:
        self.ranges.append((low, high))
        return high


def in_child(action: Callable[[], object]) -> str:
    """`action` in a forked child: its result as text, or the name of what it raised (read back
    through a pipe; the child leaves with os._exit, running no test teardown)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read_end)
        try:
            answer = str(action())
        except BaseException as error:
            answer = type(error).__name__
        os.write(write_end, answer.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as reader:
        text = reader.read()
    os.waitpid(child, 0)
    return text
