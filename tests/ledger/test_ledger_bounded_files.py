"""Bounded, non-blocking reads of every ledger file, and corrupt bytes as one-line errors.

A FIFO as the key file, as the anchor or as the database never blocks `verify`, `run` or
the store (each is refused in one line before anything waits on it); an oversized key or
anchor is refused by size; byte-corrupted rows give one line on open, verify and backup,
never "internal error UnicodeDecodeError".
"""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_ledger_concurrency import ONE_SLOT

from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.files import read_file, read_text
from dpmem_ref.ledger import LedgerStoreError, SQLiteLedgerStore
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession
from tests.kernel_fixtures import run_cli
from tests.ledger_fixtures import chain_key_fixture

KEY = "bounded-files-key-0123456789abcdef"


_chain_key = chain_key_fixture(KEY)


@pytest.fixture(autouse=True)
def _never_blocks() -> Iterator[None]:
    """A read that blocks (the bug) fails the test after 30 s instead of hanging the suite."""

    def blocked(*_: object) -> None:
        raise TimeoutError("blocked on a file read")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def populated(path: Path) -> None:
    loaded = interface_from_dict(ONE_SLOT)
    ledger_store = SQLiteLedgerStore(path)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "race", loaded.store("M"), SeededRandomSource(1), turn_deadline_s=None
    )
    for _ in range(2):
        session.run_turn("dinner")
    ledger_store.close()


def one_line(code: int, out: str, err: str) -> str:
    text = out + err
    assert code in (1, 2) and text.count("\n") == 1, (code, out, err)
    assert "Traceback" not in text and "internal error" not in text and "UnicodeDecodeError" not in text
    return text


def test_a_fifo_as_key_file_is_refused_without_blocking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "l.db"
    populated(path)
    fifo = tmp_path / "key"
    os.mkfifo(fifo)
    monkeypatch.delenv("DPMEM_LEDGER_KEY")
    monkeypatch.setenv("DPMEM_LEDGER_KEY_FILE", str(fifo))
    text = one_line(*run_cli(["ledger", "verify", str(path)]))
    assert "DPMEM_LEDGER_KEY_FILE" in text and "FIFO" in text
    with pytest.raises(InputError, match="FIFO"):
        SQLiteLedgerStore(path)


def test_a_fifo_as_anchor_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    populated(path)
    Path(f"{path}.hwm").unlink()
    os.mkfifo(f"{path}.hwm")
    with pytest.raises(LedgerStoreError, match="anchor .*FIFO"):
        SQLiteLedgerStore(path)
    text = one_line(*run_cli(["ledger", "verify", str(path)]))
    assert "FIFO" in text


def test_a_fifo_as_database_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "l.db"
    os.mkfifo(fifo)
    with pytest.raises(LedgerStoreError, match="not a regular file"):
        SQLiteLedgerStore(fifo)
    one_line(*run_cli(["ledger", "verify", str(fifo)]))
    one_line(*run_cli(["ledger", "backup", str(fifo), str(tmp_path / "b.db")]))


def test_oversized_key_and_anchor_files_are_refused_by_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "l.db"
    populated(path)
    big = tmp_path / "big"
    big.write_bytes(b"k" * 100_000)
    Path(f"{path}.hwm").write_bytes(b" " * 100_000)
    with pytest.raises(LedgerStoreError, match="anchor .*at most 512 bytes"):
        SQLiteLedgerStore(path)
    monkeypatch.delenv("DPMEM_LEDGER_KEY")
    monkeypatch.setenv("DPMEM_LEDGER_KEY_FILE", str(big))
    text = one_line(*run_cli(["ledger", "verify", str(path)]))
    assert "at most" in text


def test_the_reader_refuses_non_regular_and_undecodable_files(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="FIFO"):
        read_file(tmp_path / "fifo", 10, "f")
    with pytest.raises(InputError, match="directory"):
        read_file(tmp_path, 10, "f")
    assert read_file(tmp_path / "missing", 10, "f", missing_ok=True) is None
    (tmp_path / "bad").write_bytes(b"ok \xff\xfe")
    with pytest.raises(InputError, match="undecodable bytes at offset 3"):
        read_text(tmp_path / "bad", 10, "f")
    (tmp_path / "long").write_bytes(b"x" * 11)
    with pytest.raises(InputError, match="at most 10 bytes"):
        read_file(tmp_path / "long", 10, "f")


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE chain SET body = CAST(X'7B22FF22' AS TEXT) WHERE seq = 2",
        "UPDATE turns SET record = CAST(X'FFFE00' AS TEXT)",
        "UPDATE releases SET view = CAST(X'C3' AS TEXT)",
        "UPDATE ledgers SET attribute = CAST(X'80' AS TEXT)",
        "UPDATE meta SET value = CAST(X'FF' AS TEXT) WHERE key = 'fingerprint'",
        "UPDATE chain SET mac = CAST(X'E282' AS TEXT) WHERE seq = 3",
    ],
)
def test_corrupt_bytes_are_one_line_on_open_verify_and_backup(tmp_path: Path, statement: str) -> None:
    path = tmp_path / "l.db"
    populated(path)
    raw = sqlite3.connect(path)
    raw.execute(statement)
    raw.commit()
    raw.close()
    with pytest.raises(LedgerStoreError) as refused:
        SQLiteLedgerStore(path)
    assert "\n" not in str(refused.value)
    text = one_line(*run_cli(["ledger", "verify", str(path)]))
    assert "FAILED" in text or "error" in text
    one_line(*run_cli(["ledger", "backup", str(path), str(tmp_path / "b.db")]))
    assert not (tmp_path / "b.db").exists()
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    figure2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"
    code, out, err = run_cli(["run", str(figure2), "--store", "M", "--queries", str(queries), "--store-url", str(path)])
    assert out == "" and one_line(code, out, err)
