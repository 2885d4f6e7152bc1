"""Property-based fuzzing of the live `dpmem serve` from its own OpenAPI schema (schemathesis).

The schema is fetched from the running server's /openapi.json; for every operation,
schemathesis generates requests that fit the schema (positive) and requests that break it
(negative); each is sent with every kind of credential (none, an unknown token, an
application token, the owner token). Every response must: not be a 5xx; have a documented
status code, content type and body schema; carry no traceback; and contain no memory text
(each memory item of the served file carries a unique marker). Bounded and derandomized:
MAX_EXAMPLES per operation and mode (200 under HYPOTHESIS_PROFILE=thorough), derandomize=True.

schemathesis's own pytest integration (`from_fixture`) does not run under pytest 9 here
(it reads a removed private attribute), so the strategies are drawn with plain Hypothesis.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.serve.live import LiveServer, auth, marked_memory, write_keys

schemathesis = pytest.importorskip("schemathesis", reason="extra serve-test (schemathesis) not installed")
import requests  # noqa: E402  # schemathesis's own HTTP client
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

MAX_EXAMPLES = 200 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 12
OPERATIONS = [
    "GET /v1/users/{user}/memory",
    "GET /v1/users/{user}/memory/{item_id}",
    "GET /v1/users/{user}/export",
    "POST /v1/turns",
    "POST /v1/users/{user}/memory",
    "PUT /v1/users/{user}/memory/{item_id}",
    "DELETE /v1/users/{user}/memory/{item_id}",
    "GET /v1/users/{user}/ledgers",
    "GET /v1/budget",
    "POST /v1/turns/stream",
    "POST /v1/chat/completions",
    "GET /healthz",
]
OWNER_READS = {"GET /v1/users/{user}/memory", "GET /v1/users/{user}/memory/{item_id}", "GET /v1/users/{user}/export"}
"""The owner's memory reads: memory text by design, to the owner token only (never to anyone else)."""
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
TRACEBACK_SIGNS = ("Traceback", 'File "', "Exception in ASGI", "Internal Server Error")


SLOTS = ["health", "food", "finance", "schedule"]
ITEMS_AIMED_AT = {
    "GET /v1/users/{user}/memory/{item_id}": ["m1", "m2"],
    "PUT /v1/users/{user}/memory/{item_id}": ["m3", "m4"],
    "DELETE /v1/users/{user}/memory/{item_id}": ["m5", "m6"],
}
"""The memory items (alice's, in the served file) each item operation aims at: items of its own, so
that no operation's fuzz removes what another's aims at, whatever order the tests run in (the
module's one server serves them all; mutmut runs a mutant's tests in the order of a set)."""


def aim_at_existing(case: Any, label: str, owner: bool, app: bool) -> None:
    """For the authorised credential, point a generated (valid) request at things that exist
    (a user the application may query, a declared slot, an item id of the memory file), so
    that the fuzz reaches the runtime and not only the gate's and schema's refusals."""
    pick = len(str(case.body)) + len(str(case.path_parameters))  # deterministic in the case
    if app and label in ("POST /v1/turns", "POST /v1/turns/stream", "POST /v1/chat/completions") and isinstance(case.body, dict):
        case.body = {**case.body, "user": "alice"}
    if app and label == "POST /v1/chat/completions" and isinstance(case.body, dict):
        case.body = {**case.body, "messages": [{"role": "user", "content": str(case.body.get("model", "hi"))[:64] or "hi"}]}
    if app and label == "GET /v1/budget" and isinstance(case.query, dict):
        case.query = {**case.query, "user": "alice"}
    if owner and label in ITEMS_AIMED_AT:
        items = ITEMS_AIMED_AT[label]
        case.path_parameters = {**case.path_parameters, "user": "alice", "item_id": items[pick % len(items)]}
    if owner and label == "POST /v1/users/{user}/memory" and isinstance(case.body, dict):
        case.body = {**case.body, "slot": SLOTS[pick % len(SLOTS)]}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str], list[str], Any]]:
    folder = tmp_path_factory.mktemp("fuzz")
    keys, tokens = write_keys(folder, {"recipes": ["alice", "bob", "user"], "other": []})
    memory, markers = marked_memory(folder)
    with LiveServer(folder, keys, memory, f"sqlite:///{folder / 'ledgers.db'}") as server:
        yield server, tokens, markers, schemathesis.openapi.from_url(f"{server.url}/openapi.json")


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["positive", "negative"])
@pytest.mark.parametrize("label", OPERATIONS)
def test_fuzzed_requests_never_get_a_5xx_a_traceback_or_memory_text(live: Any, label: str, mode: GenerationMode) -> None:
    server, tokens, markers, schema = live
    operation = schema.find_operation_by_label(label)
    assert operation is not None, f"{label} missing from the live schema"
    if mode is GenerationMode.NEGATIVE and not operation.body and not operation.path_parameters:
        pytest.skip("no input to break")
    credentials = [{}, auth("unknown-token"), auth(tokens["recipes"]), auth(tokens["owner"])]
    statuses: list[int] = []
    session = requests.Session()
    session.trust_env = False  # loopback only: no proxy from the environment

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    def fuzz(case: Any) -> None:
        for headers in credentials:
            if mode is GenerationMode.POSITIVE:
                aim_at_existing(case, label, owner=headers == credentials[3], app=headers == credentials[2])
            response = case.call(base_url=server.url, session=session, headers=headers, timeout=60)
            case.validate_response(response, checks=CHECKS)
            text = response.text
            assert not any(sign in text for sign in TRACEBACK_SIGNS), text[:200]
            if not (label in OWNER_READS and headers == credentials[3] and response.status_code == 200):
                assert not any(marker in text for marker in markers), "memory text in a response"
            statuses.append(response.status_code)

    try:
        fuzz()
    finally:
        session.close()
    assert statuses and max(statuses) < 500
    if mode is GenerationMode.POSITIVE:  # the fuzz reached the runtime, not only the gate
        assert any(200 <= code < 300 for code in statuses), sorted(set(statuses))
    log = server.log_text()
    assert "Traceback" not in log and "internal error" not in log
    assert not any(marker in log for marker in markers)
    assert tokens["owner"] not in log and tokens["recipes"] not in log
