"""One load per served turn over HTTP: `POST /v1/turns` and `POST /v1/chat/completions` each load
the calling application's scope once (the runtime's turn; the deadline and the channel read no
ledger). In process: the real runtime and ASGI app over a SQLite ledger, `load` counted on the
real SQLite session."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="extra serve not installed")
from starlette.testclient import TestClient  # noqa: E402

from dpmem_ref.ledger.facts import SessionKey  # noqa: E402
from dpmem_ref.ledger.scopes import ScopeKey  # noqa: E402
from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.serve.app import create_app  # noqa: E402
from dpmem_ref.serve.keys import load_keys  # noqa: E402
from tests.ledger_fixtures import count_loads  # noqa: E402, F401  (the `loads` fixture)
from tests.serve.live import DINNER, agent_of, auth, marked_memory, write_keys  # noqa: E402


def test_each_served_turn_loads_its_scope_once(tmp_path: Path, loads: collections.Counter[SessionKey]) -> None:
    keys_path, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledgers.db'}"
    runtime = AgentRuntime.open(str(agent_of(keys_path)), memory=str(memory), store_url=url, seed=0, turn_deadline_s=None)
    try:
        client = TestClient(create_app(runtime, load_keys(keys_path), deadline_s=None))
        for app, path, body in [
            ("recipes", "/v1/turns", {"user": "alice", "interaction": "i", "query": DINNER}),
            ("recipes", "/v1/turns", {"user": "alice", "interaction": "i", "query": "tell me a joke"}),
            ("finance", "/v1/chat/completions", {"user": "alice", "messages": [{"role": "user", "content": DINNER}]}),
            ("finance", "/v1/chat/completions", {"user": "alice", "messages": [{"role": "user", "content": DINNER}]}),
        ]:
            loads.clear()
            answer = client.post(path, headers=auth(tokens[app]), json=body)
            assert answer.status_code == 200, answer.text
            assert dict(loads) == {ScopeKey.of_app("alice", app, 0).session_key: 1}, (app, path)
    finally:
        runtime.close()
