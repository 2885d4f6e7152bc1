"""Two `dpmem serve` replicas on one PostgreSQL ledger, concurrent clients, one replica
SIGKILLed while requests to it are in flight (then restarted on the same ledger); then an
independent check that reads the
ledger tables directly (plain SQL, exact Fractions; no dpmem code) and finds:
- 0 overruns: every ledger row is an application scope whose cap is the application's share
  in the agent file; in every scope the admitted charges, summed in commit order, never pass
  the share, and the stored ledger equals that sum; per user, the charges of all application
  scopes never pass the per-user cap U_a (tests.serve.sqlcheck.tally);
- 0 uncharged releases: every view a client received as a charged release ("released" in
  the control) has an admitted, charged release row in that client's scope; every view
  received as a fallback is the slot's generic view.

The PostgreSQL server is the pip-installed one (tests/postgres_server.py, Unix socket only);
the replicas listen on 127.0.0.1. Clients retry a request that failed on the killed replica
on the other one, as a load balancer would. Bounded: a fixed list of turns per client.
"""

from __future__ import annotations

import re
import threading
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from tests import postgres_server
from tests.serve.live import AGENT, DINNER, LiveServer, agent_of, auth, httpx, marked_memory, write_keys
from tests.serve.sqlcheck import tally

CLIENTS = 8
TURNS_PER_CLIENT = 10
KILL_AFTER = 12  # responses received before replica 0 is killed (while it has a request in flight)
QUERIES = [DINNER, "Remind me about my doctor appointment", "Help me with my budget and bills", "Plan my weeknight evenings", "hello"]
SCOPES = [("alice", "recipes"), ("bob", "recipes"), ("alice", "finance")]


def view_names() -> dict[str, dict[str, str]]:
    """slot -> view text -> view name, and the generic view per slot, from the interface file."""
    data = tomllib.loads((AGENT.parent / "interface.toml").read_text())
    return {slot: {str(v["text"]): name for name, v in spec["views"].items()} for slot, spec in data["slots"].items()}


class Clients:
    """Concurrent clients over two replicas; replica 0 is killed mid-run."""

    def __init__(self, replicas: list[LiveServer], tokens: dict[str, str]) -> None:
        self.replicas, self.tokens = replicas, tokens
        self.lock = threading.Condition()
        self.received: list[tuple[str, str, dict[str, Any]]] = []
        self.in_flight = [0, 0]
        self.lost = 0  # requests that died with the killed replica (then retried on the other)
        self.dead: set[int] = set()

    def send(self, client: list[Any], index: int, user: str, app: str, body: dict[str, str]) -> dict[str, Any]:
        for attempt in range(2):
            target = index % 2 if attempt == 0 else 1 - index % 2
            with self.lock:
                if target in self.dead:
                    target = 1 - target
                self.in_flight[target] += 1
                self.lock.notify_all()
            try:
                response = client[target].post("/v1/turns", headers=auth(self.tokens[app]), json=body)
            except httpx.TransportError:
                with self.lock:
                    self.lost += 1
                continue
            finally:
                with self.lock:
                    self.in_flight[target] -= 1
            assert response.status_code == 200, response.text
            return dict(response.json())
        raise AssertionError("both replicas failed one request")

    def run_client(self, number: int) -> None:
        clients = [replica.client() for replica in self.replicas]
        try:
            for turn in range(TURNS_PER_CLIENT):
                user, app = SCOPES[(number + turn) % len(SCOPES)]
                query = QUERIES[(number * 7 + turn) % len(QUERIES)]
                body = {"user": user, "interaction": f"c{number}", "query": query}
                answer = self.send(clients, number + turn, user, app, body)
                with self.lock:
                    self.received.append((user, app, answer))
                    self.lock.notify_all()
        finally:
            for client in clients:
                client.close()

    def kill_replica_0_mid_request(self) -> None:
        with self.lock:
            reached = self.lock.wait_for(lambda: len(self.received) >= KILL_AFTER and self.in_flight[0] > 0, timeout=300)
            assert reached, "the clients never had a request in flight to replica 0"
            self.dead.add(0)
            self.replicas[0].kill()


def independent_check(url: str, received: list[tuple[str, str, dict[str, Any]]], agent: Path) -> dict[str, int]:
    """Read dpmem_ledgers and dpmem_releases with plain SQL; count overruns (per application
    scope against its share, per user against U_a) and uncharged releases (tests.serve.sqlcheck)."""
    import psycopg

    with psycopg.connect(url) as connection:
        ledgers = connection.execute("SELECT user_name, interaction, attribute, spent, cap FROM dpmem_ledgers").fetchall()
        rows = connection.execute(
            "SELECT user_name, interaction, slot, view, admitted, charge_set, epsilon FROM dpmem_releases ORDER BY seq"
        ).fetchall()
    names = view_names()
    for _, _, answer in received:  # the views named in the answer are the texts the client was sent
        if answer["control"] is not None:
            texts = answer["response"].split(" | ")
            assert [names[v["slot"]][t] for v, t in zip(answer["views"], texts, strict=True)] == [v["view"] for v in answer["views"]]
    return tally(ledgers, rows, received, agent)


def test_two_replicas_one_killed_mid_request_no_overrun_no_uncharged_release(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="extra postgres not installed")
    url = postgres_server.new_database()
    keys, tokens = write_keys(tmp_path)
    memory, markers = marked_memory(tmp_path)
    replicas = [LiveServer(tmp_path, keys, memory, url, seed=None) for _ in range(2)]
    for replica in replicas:
        replica.start()
    try:
        clients = Clients(replicas, tokens)
        with ThreadPoolExecutor(CLIENTS) as pool:
            futures = [pool.submit(clients.run_client, n) for n in range(CLIENTS)]
            clients.kill_replica_0_mid_request()
            for future in futures:
                future.result()
        replicas[0] = LiveServer(tmp_path, keys, memory, url, seed=None).start()  # the killed replica comes back
        with replicas[0].client() as client:
            back = client.post("/v1/turns", headers=auth(tokens["recipes"]), json={"user": "bob", "interaction": "back", "query": DINNER})
        assert back.status_code == 200, back.text
        clients.received.append(("bob", "recipes", back.json()))
    finally:
        for replica in replicas:
            replica.stop()
    assert len(clients.received) == CLIENTS * TURNS_PER_CLIENT + 1
    found = independent_check(url, clients.received, agent_of(keys))
    assert found["overruns"] == 0 and found["uncharged"] == 0, (found, f"{clients.lost} requests died with the replica")
    assert found["charged_received"] > 0, found  # the run did release charged views
    verify = pytest.importorskip("dpmem_ref.ledger.postgres.verify", reason="no ledger chain in this tree")
    report = verify.verify_postgres(url)  # and the ledger's own tamper-evident chain agrees
    assert report.ok, report.line()
    assert not any(m in str(clients.received) for m in markers)


def test_a_ledger_store_that_refuses_is_a_503_one_line_then_service_resumes(tmp_path: Path) -> None:
    psycopg = pytest.importorskip("psycopg", reason="extra postgres not installed")
    url = postgres_server.new_database()
    found = re.search(r"search_path=(\w+)", unquote(url))
    assert found is not None
    table = f"{found.group(1)}.dpmem_ledgers"
    keys, tokens = write_keys(tmp_path)
    memory, markers = marked_memory(tmp_path)
    body = {"user": "alice", "interaction": "down", "query": DINNER}

    def owner_of_ledgers(role: str) -> None:  # as the superuser: the ledger role loses (regains) the table
        with psycopg.connect(postgres_server.server().get_uri(), dbname=postgres_server.SHARED, autocommit=True) as admin:
            admin.execute(f"ALTER TABLE {table} OWNER TO {role}")

    with LiveServer(tmp_path, keys, memory, url) as server, server.client() as client:
        assert client.post("/v1/turns", headers=auth(tokens["recipes"]), json=body).status_code == 200
        try:
            owner_of_ledgers("postgres")
            down = client.post("/v1/turns", headers=auth(tokens["recipes"]), json=body)
        finally:
            owner_of_ledgers(postgres_server.ROLE)
        assert down.status_code == 503 and down.json() == {"error": "ledger store unavailable", "field": None}
        again = client.post("/v1/turns", headers=auth(tokens["recipes"]), json=body)
        assert again.status_code == 200, again.text
    log = server.log_text()
    assert "ERROR dpmem.serve: ledger store: " in log and postgres_server.PASSWORD not in log
    assert not any(m in log or m in down.text for m in markers)
