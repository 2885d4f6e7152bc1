"""Marker test: a unique marker in every memory item never appears in
any app-facing output (echo backend: turn JSON, remaining, ledgers, `dpmem chat` stdout and
stderr), in any log record (DEBUG, every logger), or in the ledger database."""

from __future__ import annotations

import json
import logging
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime_fixtures import ROOT, copy_example, open_runtime

QUERIES = [
    "What should I cook for dinner tonight?",
    "Any advice before my doctor check-up?",
    "Budget tips please",
    "Plan my weeknight evenings",
    "tell me a joke",
]


def _marked_memory(memory: Path, marker: str) -> None:
    lines = [json.loads(line) for line in memory.read_text().splitlines() if line.strip()]
    for line in lines:
        line["text"] = f"{line['text']} {marker}"
    memory.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_marker_never_leaves_the_trusted_side(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    marker = "MRK" + secrets.token_hex(8)
    agent, memory = copy_example(tmp_path)
    _marked_memory(memory, marker)
    database = tmp_path / "l.db"
    outputs: list[str] = []
    with caplog.at_level(logging.DEBUG):
        runtime = open_runtime(agent, memory, f"sqlite:///{database}")
        item = runtime.add_memory("alice", "health", f"I swim on Fridays {marker}")
        runtime.update_memory("alice", item, f"I swim and cycle {marker}")
        for n in range(4):
            for query in QUERIES:
                turn = runtime.turn("alice", ("recipes", "finance")[n % 2], f"i{n}", query)
                outputs.append(json.dumps(turn.to_json()))
                assert turn.route is None or turn.response  # echo: the released view texts
        outputs.append(json.dumps(runtime.ledgers("alice")))
        outputs.append(json.dumps(runtime.remaining("alice", "recipes")))
        outputs.append(json.dumps(runtime.epochs()))
        runtime.close()
    assert all(marker not in text for text in outputs)
    assert all(marker not in record.getMessage() for record in caplog.records)
    assert marker.encode() not in database.read_bytes()
    assert marker in memory.read_text()  # the trusted memory file does hold it (the test is live)

    done = subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "chat", str(agent), "--memory", str(memory)]
        + ["--user", "alice", "--app", "recipes", "--store-url", f"sqlite:///{database}"],
        input="\n".join(QUERIES) + "\n",
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{ROOT}:{ROOT / 'eval'}", "PATH": "/usr/bin:/bin", "DPMEM_LEDGER_DEV_KEY": "1"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(QUERIES)
    assert marker not in done.stdout and marker not in done.stderr
