"""Safe defaults of `dpmem chat` and `dpmem serve`: no silent in-process ledger (a restart
would grant every budget again), no silent empty memory, and the shipped examples are
never written."""

from __future__ import annotations

import hashlib
import secrets
import time
from pathlib import Path

import pytest

from tests.kernel_fixtures import run_cli
from tests.runtime_fixtures import AGENT, MEMORY, ROOT

KEYS = ROOT / "examples" / "agent" / "keys.example.toml"
NO_LEDGER = "dpmem: error: --store-url: expected a durable ledger (sqlite:///PATH, postgresql://...) or --ephemeral, found 'none'\n"
NO_MEMORY = "dpmem: error: --memory: expected an existing memory file (JSON lines), found 'no such file'\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("store", [[], ["--store-url", "memory:"]])
def test_chat_refuses_an_in_process_ledger_unless_ephemeral(store: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("dinner tonight?\n"))
    argv = ["chat", str(AGENT), "--memory", str(MEMORY), "--user", "alice", "--app", "recipes", *store]
    assert run_cli(argv) == (2, "", NO_LEDGER)


def test_chat_ephemeral_says_so_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _digest(MEMORY)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("dinner tonight?\nBudget tips please\n"))
    argv = ["chat", str(AGENT), "--memory", str(MEMORY), "--user", "alice", "--app", "recipes", "--ephemeral", "--seed", "0"]
    code, out, err = run_cli(argv)
    assert code == 0 and len(out.splitlines()) == 2
    assert err.startswith("dpmem chat: --ephemeral: ledgers live in this process only")
    assert _digest(MEMORY) == before  # the shipped example is never written


def test_chat_and_serve_refuse_a_missing_memory_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = str(tmp_path / "nope.jsonl")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("dinner tonight?\n"))
    argv = ["chat", str(AGENT), "--memory", missing, "--user", "alice", "--app", "recipes", "--ephemeral"]
    assert run_cli(argv) == (2, "", NO_MEMORY)
    assert not Path(missing).exists()
    serve = ["serve", str(AGENT), "--keys", str(KEYS), "--memory", missing, "--ephemeral", "--port", "0"]
    assert run_cli(serve) == (2, "", NO_MEMORY)


def test_serve_refuses_an_in_process_ledger_unless_ephemeral() -> None:
    argv = ["serve", str(AGENT), "--keys", str(KEYS), "--memory", str(MEMORY), "--port", "0"]
    assert run_cli(argv) == (2, "", NO_LEDGER)
    assert run_cli([*argv, "--store-url", "memory:"]) == (2, "", NO_LEDGER)
    both = [*argv, "--store-url", "sqlite:///x.db", "--ephemeral"]
    code, _, err = run_cli(both)
    assert code == 2 and err.startswith("dpmem: error: --ephemeral:")


def test_an_example_memory_file_is_copied_before_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpmem_ref.runtime.memory import private_copy

    copy = private_copy(MEMORY, tmp_path / "runs", "serve")
    assert copy != MEMORY and copy.parent.parent == tmp_path / "runs"
    assert copy.read_bytes() == MEMORY.read_bytes() and (copy.stat().st_mode & 0o777) == 0o600
    own = tmp_path / "memory.jsonl"
    own.write_bytes(MEMORY.read_bytes())
    assert private_copy(own, tmp_path / "runs", "serve") == own  # the operator's own file is served in place


def test_the_copy_folder_is_named_for_the_command_the_utc_time_and_a_random_suffix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dpmem_ref.runtime.memory import private_copy

    monkeypatch.setattr(time, "gmtime", lambda *_: time.struct_time((2024, 3, 5, 7, 8, 9, 1, 65, 0)))
    monkeypatch.setattr(secrets, "token_hex", lambda size: "ab" * size)
    copy = private_copy(MEMORY, tmp_path / "runs", "serve")
    assert copy == tmp_path / "runs" / "serve-20240305T070809Z-ababab" / "memory.jsonl"
    with pytest.raises(FileExistsError):  # a folder of that name already there: never reused
        private_copy(MEMORY, tmp_path / "runs", "serve")
