"""Shared pieces of the runtime tests (tests/runtime/test_runtime_*.py): the example agent, a
runtime on each ledger backend, exact sums over committed release rows, an encoder whose
similarities are given, and a local OpenAI-compatible endpoint."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import attrs

import tests.postgres_server as postgres_server
from dpmem_ref.runtime import AgentRuntime

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "agent" / "assistant.toml"
INTERFACE = ROOT / "examples" / "agent" / "interface.toml"
MEMORY = ROOT / "examples" / "agent" / "memory.jsonl"
BACKENDS = ["memory", "sqlite", "postgres"]


def copy_example(tmp_path: Path) -> tuple[Path, Path]:
    """The example agent and interface files, and a writable copy of the memory file."""
    for source in (AGENT, INTERFACE):
        shutil.copy(source, tmp_path / source.name)
    memory = tmp_path / "memory.jsonl"
    shutil.copy(MEMORY, memory)
    return tmp_path / AGENT.name, memory


def store_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'ledgers.db'}"
    return postgres_server.new_database()  # a real server (skips if none starts)


def open_runtime(agent: Path, memory: Path | None, url: str, **options: Any) -> AgentRuntime:
    options.setdefault("seed", 0)
    options.setdefault("turn_deadline_s", None)
    return AgentRuntime.open(agent, memory=memory, store_url=url, **options)


def charged(runtime: AgentRuntime, user: str, app: str) -> dict[str, Fraction]:
    """Exact sum of the eps charged per attribute over every committed release row of the
    (user, app) scope (what the ledger must equal)."""
    scoped, _ = runtime._scope(user, app)  # noqa: SLF001  # the scope's own session rows
    total = {a: Fraction(0) for a in runtime.interface.caps}
    for release in scoped.app.load().releases:
        for attribute in release.charge_set:
            total[attribute] += release.epsilon
    return total


def ledger_table(runtime: AgentRuntime, user: str) -> dict[tuple[int, str | None], dict[str, Fraction]]:
    return {
        (row["scope"]["epoch"], row["scope"]["app"]): {a: Fraction(v) for a, v in row["ledgers"].items()}
        for row in runtime.ledgers(user)
    }


def as_fractions(table: Mapping[str, str]) -> dict[str, Fraction]:
    return {a: Fraction(v) for a, v in table.items()}


@attrs.frozen
class FixedEncoder:
    """An encoder whose similarities are given: the same list for any text."""

    similar: tuple[Fraction, ...]
    asked: list[tuple[str, list[str]]] = attrs.field(factory=list)

    def similarities(self, text: str, targets: Sequence[str]) -> list[Fraction]:
        self.asked.append((text, list(targets)))
        return list(self.similar)


class OpenAIEndpoint:
    """A local OpenAI-compatible /v1/chat/completions endpoint: a real HTTP server on loopback in
    this process, answering each request with `answer(body)` and keeping every request's body (its
    path under "path"). `with OpenAIEndpoint(...) as endpoint:` serves; `endpoint.llm` is its
    `--llm` text."""

    def __init__(self, answer: Callable[[dict[str, Any]], str]) -> None:
        self.bodies: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  # http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.bodies.append({"path": self.path, **body})
                data = json.dumps({"choices": [{"message": {"content": answer(body)}}], "usage": {}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.llm = f"openai:http://127.0.0.1:{self.server.server_port}/v1#tiny-model"

    def __enter__(self) -> OpenAIEndpoint:
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
