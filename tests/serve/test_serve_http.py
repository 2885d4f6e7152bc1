"""`dpmem serve` over real HTTP: a uvicorn process on a loopback port, spoken to with httpx.

Authentication and authorisation for every endpoint and token kind; malformed bodies; a
budget scope that continues across interactions and server restarts; the budget exhausted
over HTTP ending in generic views with remaining exactly 0; no memory text or token in any
response or log line.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.serve.live import AGENT, APPS, DINNER, LiveServer, agent_of, auth, marked_memory, scopes_of, write_keys

CHECKUP = "Remind me what to ask at my doctor appointment"  # routed to checkup-reminder: charges diabetes


def generic_text(slot: str) -> str:
    """The text of a slot's generic view, read from the interface file."""
    import tomllib

    data = tomllib.loads((AGENT.parent / "interface.toml").read_text())
    generic = data["slots"][slot]["generic"]
    return str(data["slots"][slot]["views"][generic]["text"])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str], list[str]]]:
    folder = tmp_path_factory.mktemp("serve")
    keys, tokens = write_keys(folder, {**APPS, "stranger": []})  # stranger: authorised for no user
    memory, markers = marked_memory(folder)
    with LiveServer(folder, keys, memory, f"sqlite:///{folder / 'ledgers.db'}") as server:
        yield server, tokens, markers


def fractions(table: dict[str, str]) -> dict[str, Fraction]:
    return {a: Fraction(v) for a, v in table.items()}


# --- authentication and authorisation --------------------------------------------------

KINDS = ["none", "basic", "empty", "unknown", "owner", "recipes", "stranger"]


def headers_for(kind: str, tokens: dict[str, str]) -> dict[str, str]:
    special = {
        "none": {},
        "basic": {"Authorization": f"Basic {tokens['owner']}"},
        "empty": {"Authorization": "Bearer"},
        "unknown": auth(f"unknown-{secrets.token_urlsafe(16)}"),
    }
    return special[kind] if kind in special else auth(tokens[kind])


EXPECTED_TURN = {"none": 401, "basic": 401, "empty": 401, "unknown": 401, "owner": 403, "recipes": 200, "stranger": 403}
EXPECTED_OWNER = {"none": 401, "basic": 401, "empty": 401, "unknown": 401, "owner": 0, "recipes": 403, "stranger": 403}


def _new_item(client: Any, tokens: dict[str, str]) -> str:
    created = client.post("/v1/users/dave/memory", headers=auth(tokens["owner"]), json={"slot": "finance", "text": "I save"})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


@pytest.mark.parametrize("kind", KINDS)
def test_every_endpoint_answers_each_token_kind_as_documented(served: Any, kind: str) -> None:
    server, tokens, _ = served
    headers = headers_for(kind, tokens)
    with server.client() as client:
        item = _new_item(client, tokens)
        try:
            _each_endpoint(client, headers, kind, item)
        finally:  # free the slot position again, whatever happened
            client.delete(f"/v1/users/dave/memory/{item}", headers=auth(tokens["owner"]))


def _each_endpoint(client: Any, headers: dict[str, str], kind: str, item: str) -> None:
    calls = [
        ("POST", "/v1/turns", {"user": "alice", "interaction": "auth", "query": "hello"}, EXPECTED_TURN[kind], 200),
        ("POST", "/v1/users/dave/memory", {"slot": "finance", "text": "I save more"}, EXPECTED_OWNER[kind], 201),
        ("PUT", f"/v1/users/dave/memory/{item}", {"text": "I save a lot"}, EXPECTED_OWNER[kind], 200),
        ("GET", "/v1/users/alice/ledgers", None, EXPECTED_OWNER[kind], 200),
        ("DELETE", f"/v1/users/dave/memory/{item}", None, EXPECTED_OWNER[kind], 200),
        ("GET", "/healthz", None, 200, 200),
        ("GET", "/openapi.json", None, 200, 200),
    ]
    for method, path, body, expected, success in calls:
        response = client.request(method, path, headers=headers, json=body)
        if response.status_code == 201:  # the owner's add: free the position again
            client.delete(f"/v1/users/dave/memory/{response.json()['id']}", headers=headers)
        assert response.status_code == (expected or success), (method, path, kind, response.text)
        if response.status_code == 401:
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json() == {"error": "missing or unknown bearer token", "field": None}
        if response.status_code == 403:
            assert response.json()["error"] in {
                "this endpoint takes an application token",
                "this endpoint takes the owner token",
                "this application may not query this user",
            }


def test_an_application_may_query_only_its_listed_users(served: Any) -> None:
    server, tokens, _ = served
    with server.client() as client:
        for app, user, status in [("recipes", "alice", 200), ("recipes", "bob", 200), ("finance", "bob", 403), ("recipes", "carol", 403)]:
            response = client.post("/v1/turns", headers=auth(tokens[app]), json={"user": user, "interaction": "i", "query": "hi"})
            assert response.status_code == status, (app, user, response.text)


def test_authentication_comes_before_the_body(served: Any) -> None:
    server, tokens, _ = served
    with server.client() as client:
        for content in (b"not json", b"\xff\xfe", b'{"user": 1}'):
            assert client.post("/v1/turns", content=content).status_code == 401
            assert client.post("/v1/users/alice/memory", content=content, headers=auth("nope")).status_code == 401


# --- malformed bodies ------------------------------------------------------------------

MALFORMED = [
    ({"interaction": "i", "query": "hi"}, "body.user: Field required", "body.user"),
    ({"user": 7, "interaction": "i", "query": "hi"}, "body.user: Input should be a valid string", "body.user"),
    ({"user": "alice", "interaction": "i", "query": ""}, "body.query: String should have at least 1 character", "body.query"),
    ({"user": "alice", "interaction": "i", "query": "x" * 4097}, "body.query: String should have at most 4096 characters", "body.query"),
    ({"user": "alice", "interaction": "a b", "query": "hi"}, None, "body.interaction"),
    ({"user": "alice", "interaction": "i", "query": "hi", "admin": True}, "body.admin: Extra inputs are not permitted", "body.admin"),
    ([1, 2], None, "body"),
    (b"not json", "body: expected valid JSON", "body"),
    (b'{"user": "\xc3\x28"}', "body: expected UTF-8 JSON", "body"),
]


@pytest.mark.parametrize(("body", "message", "field"), MALFORMED, ids=[f"m{i}" for i in range(len(MALFORMED))])
def test_a_malformed_body_is_a_422_that_names_the_field(served: Any, body: Any, message: str | None, field: str) -> None:
    server, tokens, _ = served
    with server.client() as client:
        kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
        headers = {**auth(tokens["recipes"]), "content-type": "application/json"}
        response = client.post("/v1/turns", headers=headers, **kwargs)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert "\n" not in response.text and "Traceback" not in response.text
    if message is not None:
        assert response.json()["error"] == message


def test_a_body_over_the_bound_is_413_and_runtime_input_errors_are_422(served: Any) -> None:
    server, tokens, _ = served
    with server.client() as client:
        huge = client.post("/v1/turns", headers=auth(tokens["recipes"]), content=b"x" * 70_000)
        assert huge.status_code == 413 and huge.json()["error"] == "request body over 65536 bytes"
        chunked = client.post("/v1/turns", headers=auth(tokens["recipes"]), content=iter([b"x" * 40_000] * 2))
        assert chunked.status_code == 413  # no Content-Length: counted while it is read
        unknown = client.delete("/v1/users/alice/memory/no-such-item", headers=auth(tokens["owner"]))
        assert unknown.status_code == 422
        assert unknown.json() == {"error": "item_id: expected the id of one of this user's memory items", "field": "item_id"}
        slot = client.post("/v1/users/alice/memory", headers=auth(tokens["owner"]), json={"slot": "garden", "text": "roses"})
        assert slot.status_code == 422 and slot.json()["field"].endswith(".slot") and "roses" not in slot.text


# --- scopes over HTTP ------------------------------------------------------------------


def _turn(client: Any, token: str, user: str, interaction: str, query: str) -> dict[str, Any]:
    response = client.post("/v1/turns", headers=auth(token), json={"user": user, "interaction": interaction, "query": query})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"response", "control", "remaining", "route", "views"}
    return body


def _scope(client: Any, owner: str, user: str, app: str | None) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    listing = client.get(f"/v1/users/{user}/ledgers", headers=auth(owner)).json()
    (scope,) = [s for s in listing["scopes"] if s["scope"]["app"] == app]
    return fractions(scope["ledgers"]), fractions(scope["caps"])


def test_a_scope_continues_across_interactions_and_server_restarts(tmp_path: Path) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    store_url = f"sqlite:///{tmp_path / 'ledgers.db'}"
    user_caps, shares = scopes_of(agent_of(keys))
    share = shares["recipes"]  # remaining = the application's precommitted share - its own spending
    half = Fraction(1, 2)
    with LiveServer(tmp_path, keys, memory, store_url, seed=1) as server, server.client() as client:
        first = _turn(client, tokens["recipes"], "alice", "monday", DINNER)
        # food charges {debt, diabetes} 1/2, finance charges {debt} 1/2 (eps = B_a / K = 2/4)
        assert fractions(first["remaining"]) == {"debt": share["debt"] - 2 * half, "diabetes": share["diabetes"] - half}
        assert first["control"] == [["food", "released"], ["finance", "released"]]
        second = _turn(client, tokens["recipes"], "alice", "tuesday", DINNER)  # a new interaction id, the same scope
        assert second["control"] == [["food", "fallback"], ["finance", "fallback"]]  # debt's share is spent
        assert fractions(second["remaining"]) == {"debt": Fraction(0), "diabetes": share["diabetes"] - half}
        spent, caps = _scope(client, tokens["owner"], "alice", "recipes")
        assert spent == {"debt": Fraction(1), "diabetes": half} and caps == share
    with LiveServer(tmp_path, keys, memory, store_url, seed=2) as server, server.client() as client:
        third = _turn(client, tokens["recipes"], "alice", "wednesday", CHECKUP)  # after a restart
        assert fractions(third["remaining"]) == {"debt": Fraction(0), "diabetes": share["diabetes"] - 2 * half}
        spent, _ = _scope(client, tokens["owner"], "alice", "recipes")
        assert spent == {"debt": Fraction(1), "diabetes": Fraction(1)}
        # another application's scope starts at its own share, whatever recipes spent (it reads
        # nothing of another's spending); the shares sum to at most the per-user caps U_a
        other = _turn(client, tokens["finance"], "alice", "monday", CHECKUP)
        assert fractions(other["remaining"]) == {"debt": shares["finance"]["debt"], "diabetes": shares["finance"]["diabetes"] - half}
        finance_spent, finance_caps = _scope(client, tokens["owner"], "alice", "finance")
        assert finance_spent == {"debt": Fraction(0), "diabetes": half} and finance_caps == shares["finance"]
        # the per-user total: the sum of the application scopes, under U_a (the shares sum to <= U_a)
        user_spent, listed_caps = _scope(client, tokens["owner"], "alice", None)
        assert user_spent == {a: spent[a] + finance_spent[a] for a in spent} and listed_caps == user_caps
        assert all(share[a] + shares["finance"][a] <= user_caps[a] for a in user_caps)


def test_the_budget_exhausted_over_http_ends_in_generic_views_with_remaining_exactly_0(tmp_path: Path) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, markers = marked_memory(tmp_path)
    generic = {slot: generic_text(slot) for slot in ("health", "food", "finance")}
    with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", seed=3) as server:
        with server.client() as client:
            seen = []
            for turn in range(12):  # 2 dinners then 3 check-ups exhaust the share (debt 1, diabetes 2)
                body = _turn(client, tokens["recipes"], "bob", f"chat{turn % 3}", DINNER if turn < 2 else CHECKUP)
                seen.append(body)
                if all(Fraction(v) == 0 for v in body["remaining"].values()):
                    break
            assert fractions(seen[-1]["remaining"]) == {"debt": Fraction(0), "diabetes": Fraction(0)}, seen
            for query, slots in ((DINNER, ("food", "finance")), (CHECKUP, ("health",))):
                for _ in range(2):
                    body = _turn(client, tokens["recipes"], "bob", "late", query)
                    assert body["response"] == " | ".join(generic[s] for s in slots)
                    assert body["control"] == [[s, "fallback"] for s in slots]
                    assert fractions(body["remaining"]) == {"debt": Fraction(0), "diabetes": Fraction(0)}
            spent, caps = _scope(client, tokens["owner"], "bob", "recipes")
            assert spent == caps == scopes_of(agent_of(keys))[1]["recipes"]  # the whole share, not B_a
            assert not any(m in str(b) for b in seen for m in markers)


# --- nothing private leaves ----------------------------------------------------------------


def test_no_memory_text_or_token_in_any_response_or_log_line(tmp_path: Path) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, markers = marked_memory(tmp_path)
    secret = f"SECRET{secrets.token_hex(8)}"
    ledger_key = f"ledger-key-{secrets.token_hex(16)}"  # the ledger chain's HMAC key (docs/durability.md)
    bodies: list[str] = []
    store_url = f"sqlite:///{tmp_path / 'ledgers.db'}"
    with LiveServer(tmp_path, keys, memory, store_url, env={"DPMEM_LEDGER_KEY": ledger_key}) as server, server.client() as client:
        owner, app = auth(tokens["owner"]), auth(tokens["recipes"])
        for response in [
            client.post("/v1/users/alice/memory", headers=owner, json={"slot": "finance", "text": f"I love pasta {secret}"}),
            client.post("/v1/users/alice/memory", headers=owner, json={"slot": "nowhere", "text": f"x {secret}"}),
            client.post("/v1/users/alice/memory", headers=owner, json={"slot": "food", "text": f"{secret}" * 2000}),
            client.post("/v1/users/alice/memory?token=" + tokens["owner"], headers=owner, json={"slot": "food", "text": 5}),
            client.post("/v1/turns", headers=auth(tokens["owner"] + "x"), json={}),
        ]:
            bodies.append(response.text + str(response.headers))
        item = client.post("/v1/users/alice/memory", headers=owner, json={"slot": "finance", "text": f"Fresh {secret}"}).json()["id"]
        for response in [
            client.put(f"/v1/users/alice/memory/{item}", headers=owner, json={"text": f"Updated {secret}"}),
            client.get("/v1/users/alice/ledgers", headers=owner),
            *(client.post("/v1/turns", headers=app, json={"user": "alice", "interaction": "m", "query": q}) for q in (DINNER, CHECKUP, "What about my spending budget?", "Plan my weeknight evenings", "hello")),
            client.delete(f"/v1/users/alice/memory/{item}", headers=owner),
        ]:
            bodies.append(response.text + str(response.headers))
    log = server.log_text()
    assert "POST /v1/turns 200" in log and "POST /v1/users/{user}/memory 201" in log  # the log is written
    for private in [secret, *markers, "I love pasta", tokens["owner"], tokens["recipes"], ledger_key]:
        assert not any(private in body for body in bodies), private
        assert private not in log, private
    assert "Traceback" not in log and "alice" not in log  # route templates only, never the concrete path


def test_the_openapi_schema_names_every_route_and_token_kind(served: Any) -> None:
    server, _, _ = served
    with server.client() as client:
        schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == {
        "/v1/turns",
        "/v1/turns/stream",
        "/v1/budget",
        "/v1/chat/completions",
        "/v1/users/{user}/memory",
        "/v1/users/{user}/memory/{item_id}",
        "/v1/users/{user}/export",
        "/v1/users/{user}/ledgers",
        "/healthz",
    }
    assert set(schema["components"]["securitySchemes"]) == {"applicationToken", "ownerToken"}
    for path, method in [("/v1/turns", "post"), ("/v1/turns/stream", "post"), ("/v1/budget", "get"), ("/v1/chat/completions", "post")]:
        assert schema["paths"][path][method]["security"] == [{"applicationToken": []}]
    for path, method in [
        ("/v1/users/{user}/memory", "post"),
        ("/v1/users/{user}/memory", "get"),
        ("/v1/users/{user}/memory/{item_id}", "get"),
        ("/v1/users/{user}/export", "get"),
        ("/v1/users/{user}/ledgers", "get"),
    ]:
        assert schema["paths"][path][method]["security"] == [{"ownerToken": []}]


def test_the_seed_option_makes_a_servers_releases_reproducible(tmp_path: Path) -> None:
    """`dpmem serve --seed N` (testing and demos): two servers started with the same seed, on fresh
    stores, release the same views to the same turns; another seed releases others. (Ignored,
    the sampler would draw from the operating system and the two would differ.)"""

    def released(seed: int, folder: Path) -> list[str]:
        folder.mkdir()
        users = [f"user{n}" for n in range(8)]  # each one's first dinner releases (its own budget)
        keys, tokens = write_keys(folder, {**APPS, "recipes": users})
        memory, _ = marked_memory(folder)
        with LiveServer(folder, keys, memory, f"sqlite:///{folder / 'ledgers.db'}", seed=seed) as server:
            with server.client() as client:
                return [_turn(client, tokens["recipes"], user, "first", DINNER)["response"] for user in users]

    first = released(5, tmp_path / "a")
    assert released(5, tmp_path / "b") == first
    assert released(6, tmp_path / "c") != first


def test_the_llm_option_sends_each_turn_to_that_model(tmp_path: Path) -> None:
    """`dpmem serve --llm openai:URL#MODEL`: a turn's answer is the model's, asked by name at that
    endpoint (a local OpenAI-compatible server), not the default echo channel's."""
    from tests.runtime_fixtures import OpenAIEndpoint

    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    with OpenAIEndpoint(lambda _: "Lentil soup tonight.") as endpoint:
        extra = ["--llm", endpoint.llm]
        with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", extra=extra) as server:
            with server.client() as client:
                body = _turn(client, tokens["recipes"], "alice", "llm", DINNER)
    assert body["response"] == "Lentil soup tonight."
    # the start-up check (the channel answers before the server listens), then the turn's one request
    asked = [(b["path"], b["model"], b["messages"][-1]["content"]) for b in endpoint.bodies]
    assert asked == [
        ("/v1/chat/completions", "tiny-model", "start-up check"),
        ("/v1/chat/completions", "tiny-model", DINNER),
    ]
