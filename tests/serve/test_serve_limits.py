"""Slow clients do not deny service: bounded connections of `dpmem serve` (red-team style).

A real server on loopback; attackers hold 1,000 connections that send half a request and stall
(half a request line, headers without their end, a body shorter than its Content-Length),
spread over loopback source addresses 127.0.0.2..; while they are held, a well-behaved client's
/healthz and turns answer within a second. The per-client limit closes the connection past it;
the header and body timeouts close stalled connections. Everything is bounded: the attack
opens a fixed number of sockets, every wait has a deadline, and all sockets are closed.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve.live import DINNER, LiveServer, auth, marked_memory, write_keys

STALLED = 1000
PER_CLIENT = 50  # connections per attacking source address (the server's limit is 64)
HALF_REQUESTS = [
    b"GET /healthz HT",  # half a request line
    b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc\r\n",  # headers without their end
    b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{\"user\": ",  # short body
]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def stall(port: int, count: int, first_source: int = 2) -> list[socket.socket]:
    """`count` connections, PER_CLIENT per source address 127.0.0.N, each sending half a request."""
    held: list[socket.socket] = []
    try:
        for index in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(sock)
            sock.settimeout(5)
            sock.bind((f"127.0.0.{first_source + index // PER_CLIENT}", 0))
            sock.connect(("127.0.0.1", port))
            sock.sendall(HALF_REQUESTS[index % len(HALF_REQUESTS)])
    except BaseException:
        release(held)
        raise
    return held


def release(held: list[socket.socket]) -> None:
    for sock in held:
        sock.close()


def closed_by_server(sock: socket.socket, within_s: float) -> bool:
    """True if the server closes (EOF or reset) within `within_s`."""
    sock.settimeout(within_s)
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("limits")
    keys, tokens = write_keys(folder)
    memory, _ = marked_memory(folder)
    extra = ["--header-timeout", "3", "--body-timeout", "3", "--max-connections-per-client", "64"]
    with LiveServer(folder, keys, memory, f"sqlite:///{folder / 'ledgers.db'}", extra=extra) as server:
        yield server, tokens


@pytest.fixture(scope="module")
def patient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    """The default timeouts (10 s head, 30 s body): the attack stays held through the test."""
    folder = tmp_path_factory.mktemp("patient")
    keys, tokens = write_keys(folder)
    memory, _ = marked_memory(folder)
    with LiveServer(folder, keys, memory, f"sqlite:///{folder / 'ledgers.db'}") as server:
        yield server, tokens


def test_a_thousand_stalled_connections_do_not_delay_healthz_or_a_turn(patient: Any) -> None:
    server, tokens = patient
    opened = time.monotonic()
    held = stall(_port(server.url), STALLED)
    try:
        with server.client(timeout=5) as client:
            for _ in range(3):
                started = time.monotonic()
                assert client.get("/healthz").status_code == 200
                healthz_s = time.monotonic() - started
                started = time.monotonic()
                turn = client.post("/v1/turns", headers=auth(tokens["recipes"]), json={"user": "alice", "interaction": "slow", "query": DINNER})
                turn_s = time.monotonic() - started
                assert turn.status_code == 200, turn.text
                assert healthz_s < 1.0 and turn_s < 1.0, (healthz_s, turn_s)
        still_open = sum(not closed_by_server(sock, 0.0001) for sock in held)
        if time.monotonic() - opened < 9.0:  # inside the 10 s header timeout
            assert still_open == STALLED  # the attack was really held while the client was served
    finally:
        release(held)


def test_the_connection_past_the_per_client_limit_is_closed_at_once(served: Any) -> None:
    server, _ = served
    held = stall(_port(server.url), 64, first_source=200)  # 50 from .200, 14 from .201
    extra = stall(_port(server.url), 64 - 14, first_source=201)  # .201 now holds 64 too
    try:
        past = socket.create_connection(("127.0.0.1", _port(server.url)), timeout=5, source_address=("127.0.0.201", 0))
        try:
            assert closed_by_server(past, 2.0)
        finally:
            past.close()
        other = socket.create_connection(("127.0.0.1", _port(server.url)), timeout=5, source_address=("127.0.0.202", 0))
        try:
            other.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            other.settimeout(5)
            assert other.recv(64).startswith(b"HTTP/1.1 200")  # another address is served
        finally:
            other.close()
    finally:
        release(held + extra)


def healthz_answers(port: int, source: str) -> bool:
    """One /healthz from `source` on a fresh connection: answered 200 (else refused or closed)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    except OSError:
        return False
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        sock.settimeout(5)
        return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False
    finally:
        sock.close()


def test_the_connection_past_the_process_limit_is_closed_at_once_and_a_closed_one_frees_its_place(
    tmp_path: Path,
) -> None:
    """--max-connections 4: four stalled connections (from two addresses) are held, every further
    one from any address is closed at once, the refused ones take no place (a second and a third
    refusal in a row), and once a held connection closes the next is served."""
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    extra = ["--max-connections", "4", "--max-connections-per-client", "64"]
    with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", extra=extra) as server:
        port = _port(server.url)
        held = stall(port, 2, first_source=210) + stall(port, 2, first_source=211)
        try:
            assert not any(closed_by_server(sock, 0.2) for sock in held)  # all four are held
            for source in ("127.0.0.212", "127.0.0.213", "127.0.0.212"):
                past = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
                try:
                    assert closed_by_server(past, 2.0), source
                finally:
                    past.close()
            held.pop().close()
            deadline = time.monotonic() + 5.0
            while not healthz_answers(port, "127.0.0.212"):  # the server sees the close soon after
                assert time.monotonic() < deadline, "a closed connection never freed its place"
                time.sleep(0.05)
            assert not any(closed_by_server(sock, 0.05) for sock in held)  # the other three are still held
        finally:
            release(held)


@pytest.mark.parametrize("half", HALF_REQUESTS, ids=["request-line", "headers", "body"])
def test_a_stalled_request_is_closed_after_its_timeout(served: Any, half: bytes) -> None:
    server, _ = served
    sock = socket.create_connection(("127.0.0.1", _port(server.url)), timeout=5, source_address=("127.0.0.250", 0))
    try:
        started = time.monotonic()
        sock.sendall(half)
        assert not closed_by_server(sock, 1.0)  # still open inside the 3 s timeout
        assert closed_by_server(sock, 10.0)
        assert 2.5 < time.monotonic() - started < 10.0
    finally:
        sock.close()


def test_listening_is_printed_only_once_the_socket_answers(tmp_path: Path) -> None:
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    started = time.monotonic()
    with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}") as server:
        printed_s = time.monotonic() - started
        sock = socket.create_connection(("127.0.0.1", _port(server.url)), timeout=5)
        try:  # at once, no retry: the line came after the server started serving
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            sock.settimeout(2)
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
        finally:
            sock.close()
    log = server.log_text()
    assert "started in " in log
    reported = float(log.split("started in ", 1)[1].split(" s", 1)[0])
    assert 0 < reported <= printed_s + 0.05  # /proc counts in clock ticks (10 ms)


def test_kept_alive_answers_do_not_wait_for_a_delayed_ack(served: Any) -> None:
    """The listening socket has TCP_NODELAY: an answer written in two pieces (head, body) is not
    held back until the client's delayed ACK (~40 ms on Linux) on a kept-alive connection."""
    server, _ = served
    with server.client(timeout=5) as client:
        client.get("/healthz")
        times = []
        for _ in range(15):
            started = time.monotonic()
            assert client.get("/healthz").status_code == 200
            times.append(time.monotonic() - started)
    assert sorted(times)[len(times) // 2] < 0.030, times
