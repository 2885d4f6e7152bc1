"""A `dpmem serve` process seen from outside, beyond its routes: its log (one line format, no
uvicorn access log, the stop named by the signal or signals that asked for it), its answers (no
`Server` banner), an IPv6 loopback host (bracketed in the listening line, and served), the warning
a host other than loopback gets when it serves without TLS, and a failed start-up (exit 3).

Each test starts a real process (tests/serve/live.py). The non-loopback case is the served code
with `is_loopback` answering False for 127.0.0.1: the tests listen on loopback only.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.serve.live import DINNER, LiveServer, auth, child_environment, marked_memory, write_keys

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) ([\w.]+): (\S.*)$")
"""Every line `dpmem serve` logs (its root handler's format; uvicorn's records go through it)."""
NO_TLS_WARNING = "listening on a non-loopback address without TLS: tokens travel in clear (docs/serve.md, TLS)"


def _served_once(server: LiveServer, tokens: dict[str, str]) -> None:
    """A health check and one turn; neither answer carries a Server header (no banner naming
    the HTTP stack and its version to whoever connects)."""
    with server.client() as client:
        health = client.get("/healthz")
        turn = client.post(
            "/v1/turns", headers=auth(tokens["recipes"]), json={"user": "alice", "interaction": "log", "query": DINNER}
        )
    assert (health.status_code, turn.status_code) == (200, 200), turn.text
    assert "server" not in health.headers and "server" not in turn.headers


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_log_is_one_format_without_uvicorns_access_log_and_ends_naming_the_stop(
    tmp_path: Path, stop: signal.Signals
) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    server = LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}").start()
    try:
        _served_once(server, tokens)
    finally:
        assert server.stop(stop) == 0  # graceful: uvicorn stops, the runtime is closed, exit status 0
    lines = server.log_text().splitlines()
    parsed = [LOG_LINE.match(line) for line in lines]
    assert lines and all(parsed), [line for line, match in zip(lines, parsed, strict=True) if match is None]
    # uvicorn's access log is off (its line names the client's address and port); each request
    # is the service's own line, method, route, status and time
    assert "uvicorn.access" not in {match.group(2) for match in parsed if match}
    requests = [match.group(3) for match in parsed if match and match.group(3).startswith(("GET ", "POST "))]
    assert [re.sub(r" \d+\.\dms$", "", request) for request in requests] == ["GET /healthz 200", "POST /v1/turns 200"]
    last = parsed[-1]
    assert last is not None and last.groups() == ("INFO", "dpmem.serve", f"stopped ({stop.name})")
    assert [line for line in lines if " WARNING " in line] == []  # loopback needs no TLS


def test_a_second_signal_during_the_graceful_stop_forces_it_and_the_log_names_both(tmp_path: Path) -> None:
    """SIGTERM while a turn is in flight (released 10 s after its start, the longest deadline): the
    server waits for it (graceful); a SIGINT then forces the stop. The turn is cut, the exit status
    is still 0 and the last line names both signals."""
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    server = LiveServer(tmp_path, keys, memory, "memory:", extra=["--release-deadline", "10"]).start()
    outcome: list[object] = []

    def held_turn() -> None:
        try:
            with server.client() as client:
                body = {"user": "alice", "interaction": "held", "query": DINNER}
                outcome.append(client.post("/v1/turns", headers=auth(tokens["recipes"]), json=body).status_code)
        except httpx.HTTPError as error:
            outcome.append(type(error).__name__)

    client = threading.Thread(target=held_turn)
    client.start()
    try:
        time.sleep(1.0)  # the turn is in: its answer waits for the 10 s release deadline
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        waiting = "Waiting for connections to close"  # uvicorn's line: graceful, the turn holds the stop
        deadline = time.monotonic() + 15
        while waiting not in server.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting in server.log_text()
        assert server.stop(signal.SIGINT) == 0
    finally:
        server.stop()
        client.join(30)
    assert len(outcome) == 1 and outcome[0] != 200, outcome
    last = LOG_LINE.match(server.log_text().splitlines()[-1])
    assert last is not None and last.group(2) == "dpmem.serve"
    assert last.group(3) in ("stopped (SIGINT, SIGTERM)", "stopped (SIGTERM, SIGINT)")


def test_a_stalled_request_holds_the_graceful_stop_ten_seconds_at_most(tmp_path: Path) -> None:
    """SIGTERM while a client has sent a request's head and not its body (a body time-out of 60 s
    would keep it open): uvicorn waits for it 10 s, the graceful bound, then cancels it, and the
    server exits 0 well before the body time-out. The bound shows in the server's own log: from
    "Shutting down" to the cancel, 10 s plus uvicorn's 0.1 s pause."""
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    server = LiveServer(tmp_path, keys, memory, "memory:", extra=["--body-timeout", "60"]).start()
    address = urlsplit(server.url)
    assert address.hostname is not None and address.port is not None
    head = (
        "POST /v1/turns HTTP/1.1\r\nHost: dpmem\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
        f"Authorization: Bearer {tokens['recipes']}\r\n\r\n"
    )
    try:
        with socket.create_connection((address.hostname, address.port)) as stalled:
            stalled.sendall(head.encode())
            time.sleep(0.5)  # the head is in: the gate waits for the body
            assert server.stop(signal.SIGTERM) == 0  # within STOP_TIMEOUT_S (30 s), not the 60 s body time-out
    finally:
        server.stop()
    began, cancelled = "Shutting down", "Cancel 1 running task(s), timeout graceful shutdown exceeded"  # uvicorn's
    when = {}
    for line in server.log_text().splitlines():
        for event in (began, cancelled):
            if line.endswith(f": {event}"):
                when[event] = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    assert len(when) == 2, server.log_text()
    waited = (when[cancelled] - when[began]).total_seconds()
    assert 10.05 <= waited < 10.9, waited


def test_an_ipv6_loopback_host_is_listed_in_brackets_and_served(tmp_path: Path) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    with LiveServer(tmp_path, keys, memory, "memory:", host="::1") as server:
        assert re.fullmatch(r"http://\[::1\]:\d+", server.url)
        _served_once(server, tokens)
    assert [line for line in server.log_text().splitlines() if " WARNING " in line] == []


PUBLIC = (
    "import sys; import dpmem_ref.serve.server as server; server.is_loopback = lambda host: False; "
    "from dpmem_ref.cli.dpmem import main; sys.exit(main(sys.argv[1:]))"
)
"""`dpmem serve` (argv after `-c`) in a process where no host counts as loopback."""


class SeenAsNonLoopback(LiveServer):
    def command(self) -> list[str]:
        command = super().command()
        assert command[1:3] == ["-m", "dpmem_ref.cli"]
        return [sys.executable, "-c", PUBLIC, *command[3:]]


def test_a_non_loopback_host_without_tls_is_warned_of_once_at_start(tmp_path: Path) -> None:
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    with SeenAsNonLoopback(tmp_path, keys, memory, "memory:") as server:
        _served_once(server, tokens)
    found = [LOG_LINE.match(line) for line in server.log_text().splitlines() if " WARNING " in line]
    assert [match.groups() if match else None for match in found] == [("WARNING", "dpmem.serve", NO_TLS_WARNING)]


FAILING_START = """
import contextlib, sys
import dpmem_ref.serve.mcp_server as mcp_server
made = mcp_server.mcp_app
def failing(turns):
    mount, _ = made(turns)
    @contextlib.asynccontextmanager
    async def lifespan(app):
        raise RuntimeError("the MCP session manager cannot start")
        yield
    return mount, lifespan
mcp_server.mcp_app = failing
from dpmem_ref.cli.dpmem import main
sys.exit(main(sys.argv[1:]))
"""
"""`dpmem serve` (argv after `-c`) whose MCP lifespan raises as it starts: uvicorn's start-up fails."""


def test_a_server_whose_start_up_fails_exits_non_zero_and_never_says_it_listens(tmp_path: Path) -> None:
    """A failed start-up (an application lifespan that raises, as the MCP server's could; lifespan
    is "on" with --mcp): uvicorn logs it and exits with its STARTUP_FAILURE status, 3, so a
    supervisor sees a failure, not the 0 of a stop; nothing says it listens or stopped."""
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    command = LiveServer(tmp_path, keys, memory, "memory:", extra=["--mcp"]).command()
    assert command[1:3] == ["-m", "dpmem_ref.cli"]
    done = subprocess.run(
        [sys.executable, "-c", FAILING_START, *command[3:]],
        capture_output=True,
        env=child_environment(),
        cwd=tmp_path,
        timeout=60,
    )
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (3, b""), err
    assert err.rstrip().endswith("ERROR uvicorn.error: Application startup failed. Exiting.") and "stopped (" not in err
