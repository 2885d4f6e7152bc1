"""The live-server harness of the `dpmem serve` tests: a real `dpmem serve` process (uvicorn on
a free loopback port, 127.0.0.1 unless a test asks for ::1), a keys file with fresh random
tokens, and the example agent's memory with a unique marker in every item.

Waits are bounded (START_TIMEOUT_S for the "listening" line, STOP_TIMEOUT_S for a graceful
stop, then SIGKILL); nothing sleeps for a fixed time.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.serve.keys import token_hash

httpx = pytest.importorskip("httpx", reason="extra serve-test (httpx) not installed")
pytest.importorskip("fastapi", reason="extra serve (fastapi, uvicorn) not installed")
pytest.importorskip("uvicorn", reason="extra serve (fastapi, uvicorn) not installed")

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "agent" / "assistant.toml"
MEMORY = ROOT / "examples" / "agent" / "memory.jsonl"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
READY = {
    "127.0.0.1": re.compile(r"^dpmem serve: listening on (https?://127\.0\.0\.1:\d+)$"),
    "::1": re.compile(r"^dpmem serve: listening on (https?://\[::1\]:\d+)$"),  # an IPv6 host is bracketed in a URL
}
"""The "listening" line of a server on each loopback host the tests use; group 1: its URL."""
APPS = {"recipes": ["alice", "bob"], "finance": ["alice"]}
"""The shipped agent file's applications (each with its share); "bob" is a subject with no memory items."""
EXTRA_SHARE = {"diabetes": 1, "debt": 1}
"""The share of an application the shipped agent file does not declare (`write_keys` adds it and
raises the per-user caps U_a by as much, so the shares still sum to at most U_a)."""
DINNER = "What should I make for dinner tonight?"  # routed to affordable-dinner: charges debt and diabetes


def write_keys(folder: Path, apps: Mapping[str, Sequence[str]] = APPS) -> tuple[Path, dict[str, str]]:
    """A keys file with the owner and `apps`; returns it and the tokens by principal name. Also
    writes the agent file the server is started with (`agent_of`): the shipped one, with a share
    for every application of `apps` (`dpmem serve` refuses an application without one)."""
    write_agent(folder / "agent.toml", apps)
    tokens = {"owner": f"owner-{secrets.token_urlsafe(24)}", **{name: f"{name}-{secrets.token_urlsafe(24)}" for name in apps}}
    lines = ["[owner]", f'token_sha256 = "{token_hash(tokens["owner"])}"']
    for name, users in apps.items():
        lines += [f"[apps.{name}]", f'token_sha256 = "{token_hash(tokens[name])}"', f"users = {json.dumps(list(users))}"]
    path = folder / "keys.toml"
    path.write_text("\n".join(lines) + "\n")
    return path, tokens


def write_agent(path: Path, apps: Iterable[str]) -> Path:
    """The shipped agent file (its interface by absolute path), its [scopes] extended with
    EXTRA_SHARE for each of `apps` it does not declare; U_a grows by the same amount. With only
    the shipped applications, the [scopes] are the shipped ones exactly."""
    text = AGENT.read_text()
    shipped = tomllib.loads(text)["scopes"]
    caps = {a: Fraction(v) for a, v in shipped["user_caps"].items()}
    shares = {app: {a: Fraction(v) for a, v in share.items()} for app, share in shipped["shares"].items()}
    for app in apps:
        if app not in shares:
            shares[app] = {a: Fraction(v) for a, v in EXTRA_SHARE.items()}
            caps = {a: caps[a] + EXTRA_SHARE[a] for a in caps}

    def inline(table: Mapping[str, Fraction]) -> str:
        return "{ " + ", ".join(f'{a} = "{v}"' for a, v in table.items()) + " }"

    scopes = ["[scopes]", f"user_caps = {inline(caps)}", "[scopes.shares]", *(f"{app} = {inline(s)}" for app, s in shares.items())]
    head, rest = text.split("[scopes]", 1)
    head = head.replace('interface = "interface.toml"', f"interface = {json.dumps(str(AGENT.parent / 'interface.toml'))}")
    path.write_text(head + "\n".join(scopes) + "\n\n[router]" + rest.split("[router]", 1)[1])
    return path


def agent_of(keys: Path) -> Path:
    """The agent file `write_keys` wrote beside `keys`."""
    return keys.with_name("agent.toml")


def scopes_of(agent: Path) -> tuple[dict[str, Fraction], dict[str, dict[str, Fraction]]]:
    """(U_a, {application: its share}) of an agent file, read with tomllib (no dpmem code)."""
    scopes = tomllib.loads(agent.read_text())["scopes"]
    caps = {a: Fraction(v) for a, v in scopes["user_caps"].items()}
    return caps, {app: {a: Fraction(v) for a, v in share.items()} for app, share in scopes["shares"].items()}


def marked_memory(folder: Path) -> tuple[Path, list[str]]:
    """The example memory, every item's text ending in a unique marker; returns file and markers."""
    markers: list[str] = []
    out = []
    for line in MEMORY.read_text().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        marker = f"MARK{secrets.token_hex(6)}"
        markers.append(marker)
        item["text"] = f"{item['text']} {marker}"
        out.append(json.dumps(item))
    path = folder / "memory.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path, markers


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def child_environment() -> dict[str, str]:
    """The environment of a `dpmem` child process: this one's, with the checkout (and eval/) on
    PYTHONPATH and unbuffered output (its lines arrive as written)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "eval")]), "PYTHONUNBUFFERED": "1"}


class LiveServer:
    """One `dpmem serve` process; `start()` returns once it listens. It serves the agent file
    `write_keys` wrote beside `keys` (`agent_of`); the store "memory:" is `--ephemeral`."""

    def __init__(
        self,
        folder: Path,
        keys: Path,
        memory: Path,
        store_url: str,
        seed: int | None = 0,
        extra: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.folder, self.keys, self.memory, self.store_url, self.seed = folder, keys, memory, store_url, seed
        self.extra, self.env, self.host = list(extra), dict(env or {}), host
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.logs: list[Path] = []

    def command(self) -> list[str]:
        command = [sys.executable, "-m", "dpmem_ref.cli", "serve", str(agent_of(self.keys)), "--memory", str(self.memory)]
        store = ["--ephemeral"] if self.store_url == "memory:" else ["--store-url", self.store_url]
        command += ["--keys", str(self.keys), *store, "--host", self.host, "--port", "0"]
        return command + ([] if self.seed is None else ["--seed", str(self.seed)]) + self.extra

    def start(self) -> LiveServer:
        log = self.folder / f"server-{len(self.logs)}-{secrets.token_hex(3)}.log"
        self.logs.append(log)
        env = {**child_environment(), **self.env}
        with log.open("wb") as sink:
            self.process = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=sink, env=env, cwd=self.folder)
        self.url = self._wait_ready()
        return self

    def _wait_ready(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        buffered = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(self.process.stdout.fileno(), 4096)
            if not chunk:
                break
            buffered += chunk
            for line in buffered.decode(errors="replace").splitlines():
                found = READY[self.host].match(line)
                if found:
                    return found.group(1)
        self.kill()
        raise AssertionError(f"dpmem serve did not start: {self.log_text()[-2000:]}")

    def client(self, timeout: float = 60.0) -> Any:
        return httpx.Client(base_url=self.url, timeout=timeout, trust_env=False)  # loopback: never a proxy

    def stop(self, how: signal.Signals = signal.SIGTERM) -> int:
        """`how` (SIGTERM or SIGINT: graceful), bounded; SIGKILL after STOP_TIMEOUT_S. The exit status."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close_pipe()
        return int(self.process.returncode)

    def kill(self) -> None:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(STOP_TIMEOUT_S)
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()

    def log_text(self) -> str:
        return "".join(path.read_text(errors="replace") for path in self.logs if path.exists())

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
