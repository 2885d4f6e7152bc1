"""Slow clients do not deny service: bounded connections of `dpmem serve` (red-team style).

A real server on loopback; attackers hold 1,000 connections that send half a request and stall
(half a request line, headers without their end, a body shorter than its Content-Length),
spread over loopback source addresses 127.0.0.2..; while they are held, a well-behaved client's
/healthz and turns answer within a second. The per-client limit closes the connection past it;
the header and body timeouts close stalled connections, the idle timeout a kept-alive one.
Everything is bounded: the attack opens a fixed number of sockets, every wait has a deadline, and
all sockets are closed.
"""

from __future__ import annotations

import re
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
    b'POST /v1/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{"user": ',  # short body
]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def connect(port: int, source: str) -> socket.socket:
    """A connection to the server on loopback from the source address `source` (5 s socket timeout)."""
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))


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
                turn = client.post(
                    "/v1/turns",
                    headers=auth(tokens["recipes"]),
                    json={"user": "alice", "interaction": "slow", "query": DINNER},
                )
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
        past = connect(_port(server.url), "127.0.0.201")
        try:
            assert closed_by_server(past, 2.0)
        finally:
            past.close()
        assert healthz_answers(_port(server.url), "127.0.0.202")  # another address is served
    finally:
        release(held + extra)


def test_a_kept_alive_connection_is_closed_once_idle_past_the_idle_timeout(tmp_path: Path) -> None:
    """--idle-timeout 1: after its answer, a kept-alive connection without a next request stays
    open, then the server closes it about 1 s later (not at uvicorn's own 5 s default)."""
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    with LiveServer(tmp_path, keys, memory, "memory:", extra=["--idle-timeout", "1"]) as server:
        sock = connect(_port(server.url), "127.0.0.230")
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: dpmem\r\n\r\n")
            assert not closed_by_server(sock, 0.3)  # answered (read here) and kept alive
            assert closed_by_server(sock, 3.0)
        finally:
            sock.close()


@pytest.mark.parametrize("field", ["header_s", "body_s", "idle_s", "per_client", "total"])
def test_a_bound_that_is_not_positive_is_refused_naming_its_field(field: str) -> None:
    """`Limits` checks its own bounds (the CLI checks its ranges first; a program that builds a
    `Limits` gets the same guard): zero and below are refused, one is the least allowed."""
    from dpmem_ref.serve.limits import Limits

    for bad in (0, -1, 0.0):
        with pytest.raises(ValueError) as refused:
            Limits(**{field: bad})
        assert str(refused.value) == f"{field}: expected a positive number, found {bad!r}"
    assert getattr(Limits(**{field: 1}), field) == 1
    if field.endswith("_s"):
        assert getattr(Limits(**{field: 0.25}), field) == 0.25


def test_the_protocol_class_is_named_as_tracebacks_and_debuggers_show_it() -> None:
    """One class per server, built by `bounded_protocol`: named BoundedH11Protocol (not
    bounded_protocol.<locals>.BoundedH11Protocol), a uvicorn H11Protocol."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from dpmem_ref.serve.limits import Limits, bounded_protocol

    first, second = bounded_protocol(Limits()), bounded_protocol(Limits())
    assert first.__name__ == first.__qualname__ == "BoundedH11Protocol"
    assert issubclass(first, H11Protocol) and first is not second  # each server counts its own connections


def held_open(port: int, source: str) -> socket.socket | None:
    """A connection from `source` sending half a request: the socket if the server holds it
    (still open after 0.3 s), None if the server closes it at once."""
    sock = connect(port, source)
    sock.sendall(HALF_REQUESTS[0])
    if closed_by_server(sock, 0.3):
        sock.close()
        return None
    return sock


@pytest.mark.parametrize(
    ("flags", "held_from", "past_from", "served_from"),
    [
        (
            ["--max-connections", "4", "--max-connections-per-client", "64"],
            ["127.0.0.210", "127.0.0.211"] * 2,
            ["127.0.0.212", "127.0.0.213", "127.0.0.212"],
            None,
        ),
        (["--max-connections-per-client", "4"], ["127.0.0.220"] * 4, ["127.0.0.220"] * 3, "127.0.0.221"),
    ],
    ids=["per-process", "per-client"],
)
def test_the_connection_past_a_limit_is_closed_at_once_and_a_closed_one_frees_exactly_its_place(
    tmp_path: Path, flags: list[str], held_from: list[str], past_from: list[str], served_from: str | None
) -> None:
    """A limit of 4: four stalled connections are held; every further one is closed at once, and
    a refused one takes no place (three refusals in a row); once a held one closes, exactly one
    more is held and the next is closed again. A per-client limit leaves other addresses served."""
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", extra=flags) as server:
        port = _port(server.url)
        held: list[socket.socket] = []
        try:
            for source in held_from:
                sock = held_open(port, source)
                assert sock is not None, f"connection {len(held) + 1} of 4 from {source} was closed"
                held.append(sock)
            for source in past_from:
                assert held_open(port, source) is None, f"a connection past the limit from {source} was held"
            if served_from is not None:
                assert healthz_answers(port, served_from)  # another address is served
            held.pop().close()
            deadline = time.monotonic() + 5.0
            while (again := held_open(port, past_from[0])) is None:  # the server sees the close soon after
                assert time.monotonic() < deadline, "a closed connection never freed its place"
            held.append(again)
            assert held_open(port, past_from[0]) is None, "a close freed more than its one place"
            assert not any(closed_by_server(sock, 0.05) for sock in held)  # all four are still held
            for _ in range(3):  # down to one open connection: three places free, not four
                held.pop(0).close()
            deadline = time.monotonic() + 5.0
            while len(held) < 4:
                if (again := held_open(port, past_from[0])) is not None:
                    held.append(again)
                else:
                    assert time.monotonic() < deadline, "closed connections never freed their places"
            assert held_open(port, past_from[0]) is None, "three closes freed more than three places"
        finally:
            release(held)


UPGRADE = (
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def test_websocket_upgrade_requests_are_plain_requests_and_never_lock_an_address_out(tmp_path: Path) -> None:
    """No route takes a WebSocket: an upgrade request is answered as the plain request it carries
    (no 101), on a connection the limits keep counting, so six of them from one address under a
    per-client limit of 4 leave that address served. (Handed to uvicorn's WebSocket protocol, a
    connection was never uncounted: the fifth upgrade request and every later connection from the
    address were refused.)"""
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    extra = ["--max-connections-per-client", "4"]
    with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", extra=extra) as server:
        port = _port(server.url)
        for _ in range(6):
            sock = connect(port, "127.0.0.240")
            try:
                sock.settimeout(5)
                sock.sendall(UPGRADE)
                assert read_answer(sock) == b"HTTP/1.1 200 OK"
            finally:
                sock.close()
        deadline = time.monotonic() + 5.0
        while not healthz_answers(port, "127.0.0.240"):  # the server sees the closes soon after
            assert time.monotonic() < deadline, "upgrade requests locked the address out"
            time.sleep(0.05)


def healthz_answers(port: int, source: str) -> bool:
    """One /healthz from `source` on a fresh connection: answered 200 (else refused or closed)."""
    try:
        sock = connect(port, source)
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


def test_a_peer_leaves_the_connection_table_when_its_last_connection_closes() -> None:
    """The per-client counts hold only peers with an open connection: a client that connects once
    from each of many addresses (IPv6 gives one a /64) cannot grow the server's memory. A real
    uvicorn server with the protocol of `dpmem serve`, in this process, so its table can be read."""
    import threading
    from collections import Counter

    import uvicorn

    from dpmem_ref.serve.limits import Limits, bounded_protocol

    protocol = bounded_protocol(Limits(per_client=4, total=100))
    cells = protocol.connection_made.__closure__ or ()  # type: ignore[attr-defined]
    (table,) = [cell.cell_contents for cell in cells if isinstance(cell.cell_contents, Counter)]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, http=protocol, log_config=None, access_log=False, lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10.0
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        for n in range(20):
            source = f"127.0.0.{100 + n}"
            pair = [held_open(port, source), held_open(port, source)]
            assert all(sock is not None for sock in pair)
            assert table[source] == 2
            release([sock for sock in pair if sock is not None])
        deadline = time.monotonic() + 5.0
        while table:
            assert time.monotonic() < deadline, f"peers without an open connection stay: {dict(table)}"
            time.sleep(0.01)
    finally:
        server.should_exit = True
        thread.join(10)


def read_answer(sock: socket.socket) -> bytes:
    """One whole HTTP/1.1 answer with a Content-Length: its status line."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, f"closed by the server after {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(4096)
        assert chunk, "closed by the server inside an answer"
        body += chunk
    assert len(body) == length
    return head.split(b"\r\n", 1)[0]


def test_a_kept_alive_connection_in_use_outlives_the_header_timeout(served: Any) -> None:
    """The header deadline covers one request head, not the connection: a client that sends a
    request every 0.4 s on one kept-alive connection is answered past the 3 s header timeout."""
    server, _ = served
    sock = connect(_port(server.url), "127.0.0.252")
    try:
        opened = time.monotonic()
        while time.monotonic() - opened < 4.5:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_answer(sock) == b"HTTP/1.1 200 OK"
            time.sleep(0.4)
    finally:
        sock.close()


def trickle_until_closed(sock: socket.socket, trickle: bytes, since: float, limit_s: float = 8.0) -> float | None:
    """Send `trickle` every 0.5 s until the server closes the connection: the seconds from `since`
    to the close, or None if it is still open `limit_s` after `since`."""
    while time.monotonic() - since < limit_s:
        try:
            sock.sendall(trickle)
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - since
        if closed_by_server(sock, 0.5):
            return time.monotonic() - since
    return None


@pytest.mark.parametrize(
    ("start", "trickle"),
    [(b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X-Slow: 1\r\n"), (HALF_REQUESTS[2], b"a")],
    ids=["head", "body"],
)
def test_a_deadline_is_not_renewed_by_bytes_that_trickle_in(served: Any, start: bytes, trickle: bytes) -> None:
    """A head (or, once the head is in, a body) sent a few bytes every 0.5 s is closed when its 3 s
    deadline passes, not kept open by each byte."""
    server, _ = served
    sock = connect(_port(server.url), "127.0.0.253")
    try:
        sock.sendall(start)
        closed_after = trickle_until_closed(sock, trickle, since=time.monotonic())
        assert closed_after is not None, "kept open past its deadline by trickled bytes"
        assert 2.5 < closed_after < 4.5
    finally:
        sock.close()


def test_after_an_answer_the_next_head_has_its_own_deadline_not_renewed_by_trickled_bytes(served: Any) -> None:
    """On a kept-alive connection the header deadline is armed again when an answer completes:
    the next head, trickled a header line every 0.5 s, is closed about 3 s after that answer."""
    server, _ = served
    sock = connect(_port(server.url), "127.0.0.254")
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(sock) == b"HTTP/1.1 200 OK"
        answered = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        closed_after = trickle_until_closed(sock, b"X-Slow: 1\r\n", since=answered)
        assert closed_after is not None, "the next head was kept open past its deadline"
        assert 2.5 < closed_after < 4.5
    finally:
        sock.close()


def test_once_the_head_is_in_the_body_has_the_body_timeout_not_what_is_left_of_the_head_s(tmp_path: Path) -> None:
    """--header-timeout 2 --body-timeout 6: an authorized turn whose body is sent over 3.5 s
    after a prompt head is read and answered (the head's deadline no longer runs), and a body
    that stalls is closed about 6 s after its head, unanswered."""
    keys, tokens = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    extra = ["--header-timeout", "2", "--body-timeout", "6"]
    body = b'{"user": "alice", "interaction": "slow-body", "query": "What should I cook for dinner?"}'
    head = b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    head += b"Authorization: Bearer " + tokens["recipes"].encode() + b"\r\n"
    head += b"Content-Length: %d\r\n\r\n" % len(body)
    with LiveServer(tmp_path, keys, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", extra=extra) as server:
        sock = connect(_port(server.url), "127.0.0.248")
        try:
            sock.sendall(head)
            for start in range(0, len(body), 13):
                time.sleep(0.5)
                sock.sendall(body[start : start + 13])
            assert read_answer(sock) == b"HTTP/1.1 200 OK"
        finally:
            sock.close()
        sock = connect(_port(server.url), "127.0.0.248")
        try:
            sock.sendall(head + body[:10])
            started = time.monotonic()
            sock.settimeout(15.0)
            assert sock.recv(4096) == b""  # closed, nothing answered
            assert 5.5 < time.monotonic() - started < 8.0
        finally:
            sock.close()


def test_the_header_deadline_counts_from_the_connection_not_from_its_first_byte(served: Any) -> None:
    """A client that waits before its first byte gains no time: a half request line sent 2 s into
    the 3 s header timeout is still closed about 3 s after the connection opened."""
    server, _ = served
    sock = connect(_port(server.url), "127.0.0.251")
    try:
        opened = time.monotonic()
        time.sleep(2.0)
        sock.sendall(HALF_REQUESTS[0])
        assert closed_by_server(sock, 10.0)
        assert 2.5 < time.monotonic() - opened < 4.5
    finally:
        sock.close()


@pytest.mark.parametrize("half", HALF_REQUESTS, ids=["request-line", "headers", "body"])
def test_a_stalled_request_is_closed_after_its_timeout(served: Any, half: bytes) -> None:
    server, _ = served
    sock = connect(_port(server.url), "127.0.0.250")
    try:
        started = time.monotonic()
        sock.sendall(half)
        assert not closed_by_server(sock, 1.0)  # still open inside the 3 s timeout
        assert closed_by_server(sock, 10.0)
        assert 2.5 < time.monotonic() - started < 10.0
    finally:
        sock.close()


def test_listening_is_printed_only_once_the_socket_answers(tmp_path: Path) -> None:
    """The "listening" line is flushed as it is printed (a supervisor reading a pipe, with no
    PYTHONUNBUFFERED, gets it at once), after the socket is served; the log says how long the
    start took, in its own format, from the dpmem.serve logger, names the worker pool asked for
    (`--workers`), and warns of nothing."""
    keys, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    started = time.monotonic()
    store = f"sqlite:///{tmp_path / 'ledgers.db'}"
    with LiveServer(tmp_path, keys, memory, store, extra=["--workers", "3"], env={"PYTHONUNBUFFERED": ""}) as server:
        printed_s = time.monotonic() - started
        sock = socket.create_connection(("127.0.0.1", _port(server.url)), timeout=5)
        try:  # at once, no retry: the line came after the server started serving
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            sock.settimeout(2)
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
        finally:
            sock.close()
    line = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO dpmem\.serve: started in (\d+\.\d\d) s$"
    found = re.findall(line, server.log_text(), flags=re.MULTILINE)
    assert len(found) == 1, server.log_text()[-2000:]
    pool = re.findall(
        r" INFO dpmem\.serve: kernel turns on (\d+) worker threads$", server.log_text(), flags=re.MULTILINE
    )
    assert pool == ["3"], server.log_text()[-2000:]
    # a clean start: no warning (uvicorn told the app is a factory, loopback needs no TLS)
    assert [line for line in server.log_text().splitlines() if " WARNING " in line] == []
    assert 0 < float(found[0]) <= printed_s + 0.05  # /proc counts in clock ticks (10 ms)


def test_the_start_up_time_is_the_process_age_read_from_proc_else_since_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "started in S s" counts from the process's start (Linux /proc: interpreter start-up and
    imports included), not from when serving began; where /proc cannot be read, from the
    monotonic time the caller passes."""
    import os
    import subprocess
    import sys

    import dpmem_ref.serve.server as server_module

    root = Path(__file__).resolve().parents[2]
    # Its name holds ") " as a process may (/proc/self/stat puts it in parentheses, unescaped).
    probe = (
        "import ctypes, time; ctypes.CDLL(None).prctl(15, b'dp) m) x', 0, 0, 0); time.sleep(0.3); "
        "from dpmem_ref.serve.server import _since_start; print(_since_start(time.monotonic()))"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    started = time.monotonic()
    age = float(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
    )
    lived = time.monotonic() - started
    assert 0.28 <= age <= lived + 0.02  # its sleep counts, and it is no older than the run that made it

    def unreadable(*_: object, **__: object) -> None:
        raise OSError("no /proc here")

    monkeypatch.setattr(server_module, "open", unreadable, raising=False)
    assert 2.0 <= server_module._since_start(time.monotonic() - 2.0) < 2.5


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
