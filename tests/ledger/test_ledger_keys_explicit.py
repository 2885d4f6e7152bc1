"""Keys are explicit: a durable ledger without a key is refused; the development key needs
DPMEM_LEDGER_DEV_KEY=1, is printed at start and is recorded in the chain (its genesis)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import SQLiteLedgerStore
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DPMEM_LEDGER_KEY", "DPMEM_LEDGER_KEY_FILE", "DPMEM_LEDGER_DEV_KEY", "DPMEM_LEDGER_ANCHOR_DIR"):
        monkeypatch.delenv(name, raising=False)


def _run(tmp_path: Path, url: str) -> tuple[int, str, str]:
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    return run_cli(["run", str(ROOT / "examples" / "figure2.toml"), "--store", "M", "--queries", str(queries),
                    "--store-url", url])  # fmt: skip


def test_a_durable_ledger_without_a_key_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="DPMEM_LEDGER_DEV_KEY=1"):
        SQLiteLedgerStore(tmp_path / "l.db")
    assert not (tmp_path / "l.db").exists()  # refused before the file is created
    code, out, err = _run(tmp_path, str(tmp_path / "l.db"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "DPMEM_LEDGER_KEY" in err, (code, out, err)


def test_the_development_key_is_explicit_printed_and_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPMEM_LEDGER_DEV_KEY", "1")
    path = tmp_path / "l.db"
    code, out, err = _run(tmp_path, str(path))
    assert code == 0 and out, (code, out, err)
    assert "DPMEM_LEDGER_DEV_KEY=1" in err and "public development key" in err, err
    raw = sqlite3.connect(path)
    genesis = json.loads(raw.execute("SELECT body FROM chain WHERE seq = 1").fetchone()[0])
    raw.close()
    assert genesis["key_id"] == "unkeyed"  # recorded in the chain
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "a-real-key-0123456789abcdef")  # never reopened under a real key
    code, out, err = _run(tmp_path, str(path))
    assert code == 2 and "chained with key id unkeyed" in err


def test_a_keyed_run_prints_no_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "a-real-key-0123456789abcdef")
    code, out, err = _run(tmp_path, str(tmp_path / "l.db"))
    assert code == 0 and "development key" not in err, (code, out, err)


@pytest.mark.parametrize("keyed", [False, True])
def test_chat_announces_the_development_key_at_start_and_only_then(keyed: bool, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.kernel_fixtures import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("DPMEM_LEDGER_")}
    env["PYTHONPATH"] = f"{ROOT}:{ROOT / 'eval'}"
    env["DPMEM_LEDGER_KEY" if keyed else "DPMEM_LEDGER_DEV_KEY"] = "k" * 32 if keyed else "1"
    command = [sys.executable, "-m", "dpmem_ref.cli", "chat", str(ROOT / "examples/agent/assistant.toml"),
               "--memory", str(ROOT / "examples/agent/memory.jsonl"), "--user", "alice", "--app", "recipes",
               "--store-url", f"sqlite:///{tmp_path / 'l.db'}"]
    done = subprocess.run(command, input="dinner?\n", capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["query"] == "dinner?"
    warned = [line for line in done.stderr.splitlines() if "DPMEM_LEDGER_DEV_KEY=1" in line]
    assert len(warned) == (0 if keyed else 1)
