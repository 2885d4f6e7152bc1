"""A served turn whose LLM channel fails after the charge: 503 naming the channel (never the
application's input), and a retry with the same Idempotency-Key is answered from the recorded
views at no new charge. In process: the real runtime and ASGI app, a channel that fails once."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="extra serve not installed")
from starlette.testclient import TestClient  # noqa: E402

from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.serve.app import create_app  # noqa: E402
from dpmem_ref.serve.keys import load_keys  # noqa: E402
from tests.serve.live import DINNER, agent_of, auth, marked_memory, scopes_of, write_keys  # noqa: E402


class FailsOnce:
    """An LLM channel whose first call fails (a dropped connection), then echoes the views."""

    def __init__(self) -> None:
        self.calls = 0

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        self.calls += 1
        if self.calls == 1:
            raise ConnectionError("the model server went away")
        return " | ".join(text for _, text in views)


def test_a_channel_failure_after_the_charge_is_a_503_and_the_retry_with_its_key_is_free(tmp_path: Path) -> None:
    keys_path, tokens = write_keys(tmp_path)
    memory, markers = marked_memory(tmp_path)
    channel = FailsOnce()
    runtime = AgentRuntime.open(str(agent_of(keys_path)), memory=str(memory), store_url="memory:", llm=channel, turn_deadline_s=None)
    share = scopes_of(agent_of(keys_path))[1]["recipes"]
    try:
        client = TestClient(create_app(runtime, load_keys(keys_path), deadline_s=0.01))
        app, key = auth(tokens["recipes"]), {"Idempotency-Key": "order-1"}
        body = {"user": "alice", "interaction": "i", "query": DINNER}
        failed = client.post("/v1/turns", headers={**app, **key}, json=body)
        assert failed.status_code == 503 and failed.json()["field"] == "llm", failed.text
        assert "unavailable (retry with the same Idempotency-Key: no new charge)" in failed.json()["error"]
        charged = client.get("/v1/budget", params={"user": "alice"}, headers=app).json()["remaining"]
        half = Fraction(1, 2)
        assert {a: Fraction(v) for a, v in charged.items()} == {"debt": share["debt"] - 2 * half, "diabetes": share["diabetes"] - half}
        retried = client.post("/v1/turns", headers={**app, **key}, json=body)
        assert retried.status_code == 200, retried.text
        answer = retried.json()
        assert answer["remaining"] == charged and answer["control"] == [["food", "released"], ["finance", "released"]]
        assert answer["response"] == " | ".join(v["text"] for v in answer["views"])  # the recorded views, regenerated
        assert client.get("/v1/budget", params={"user": "alice"}, headers=app).json()["remaining"] == charged  # no new charge
        other = client.post("/v1/turns", headers={**app, "Idempotency-Key": "order-1"}, json={**body, "query": "hello"})
        assert other.status_code == 422 and other.json()["field"] == "turn_id"  # a key names one query
        assert not any(m in failed.text + retried.text for m in markers)
    finally:
        runtime.close()
