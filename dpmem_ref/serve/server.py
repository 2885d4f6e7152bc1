"""Run one `dpmem serve` process: keys, runtime, the ASGI app, a bound socket, uvicorn.

Heavy imports (fastapi, uvicorn, the runtime) happen here, inside `serve_one`, so that
`dpmem` without the `serve` extra still starts and says what to install.

Logging: one stream (stderr), uvicorn's own access log off (it would print the concrete
path and query string); the gate logs method, route template, status and time. Neither
tokens nor bodies nor memory text are ever logged.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from dpmem_ref.core.errors import InputError, one_line
from dpmem_ref.ledger.contract import LedgerStoreError


def _import_serving() -> tuple[Any, Any]:
    try:
        import uvicorn

        from dpmem_ref.serve.app import create_app
    except ImportError as error:
        raise InputError(
            "dpmem serve", "the serve extra (pip install 'dpmem-ref[serve]')", f"{error.name} missing"
        ) from None
    return uvicorn, create_app


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); port 0 picks a free port."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto IPPROTO_TCP (not 0): asyncio sets TCP_NODELAY on accepted sockets only then, and
        # without it every kept-alive answer waited ~40 ms for the client's delayed ACK (Nagle).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except (OSError, OverflowError) as error:
        raise InputError("--host/--port", "an address this host can listen on", f"{host}:{port} ({type(error).__name__})") from None
    return sock  # not inheritable (Python's default): no process this one starts holds the port


class SerialChannel:
    """An LLM channel called by one thread at a time (model backends are not thread-safe)."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self._lock = threading.Lock()

    def respond(self, query: str, views: Any, prefix: Any) -> str:
        with self._lock:
            return str(self._channel.respond(query, views, prefix))

    def stream(self, query: str, views: Any, prefix: Any) -> Iterator[str]:
        """The channel's `stream` pieces (or its whole answer as one piece), the lock held from
        the first piece until the last or until the caller closes the iterator."""
        with self._lock:
            inner = getattr(self._channel, "stream", None)
            if not callable(inner):
                yield str(self._channel.respond(query, views, prefix))
                return
            for piece in inner(query, views, prefix):
                if piece is not None:  # a piece without text (an OpenAI-style chunk with no content)
                    yield str(piece)

    def close(self) -> None:
        close = getattr(self._channel, "close", None)
        if callable(close):
            close()


def _since_start(fallback: float) -> float:
    """Seconds since this process started (Linux /proc; elsewhere since `fallback`, a monotonic time)."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        uptime = float(open("/proc/uptime").read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.monotonic() - fallback


def _listening_server(uvicorn: Any) -> Any:
    class ListeningServer(uvicorn.Server):  # type: ignore[misc]
        """Prints the "listening" line once the server accepts (after start-up, not before)."""

        def __init__(self, config: Any, ready: str, began: float) -> None:
            super().__init__(config)
            self.ready, self.began = ready, began

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:  # uvicorn's own flag: the sockets are being served
                print(self.ready, flush=True)
                logging.getLogger("dpmem.serve").info("started in %.2f s", _since_start(self.began))

    return ListeningServer


def _configure_logging() -> None:
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.INFO)


def serve_one(
    config_path: str,
    *,
    keys_path: str,
    memory: str | None,
    store_url: str | None,
    llm: str,
    seed: int | None,
    host: str,
    port: int,
    tls_cert: str | None,
    tls_key: str | None,
    limits: Any = None,
    mcp: bool = False,
    deadline_s: float | None = None,
    workers: int | None = None,
) -> int:
    """Serve until SIGINT/SIGTERM (graceful: requests in flight finish), then close the runtime.
    The options are `dpmem serve`'s (parsed in dpmem_ref.cli.serve)."""
    uvicorn, create_app = _import_serving()
    _ListeningServer = _listening_server(uvicorn)  # noqa: N806
    from dpmem_ref.serve.keys import check_shares_cover, load_keys

    keys = load_keys(keys_path)
    if (tls_cert is None) != (tls_key is None):
        raise InputError("--tls-cert/--tls-key", "both or neither", "only one")
    check_shares_cover(keys, config_path)  # before the ledger store opens: nothing written
    from dpmem_ref.runtime import AgentRuntime
    from dpmem_ref.serve.limits import Limits, bounded_protocol

    limits = limits or Limits()
    began = time.monotonic()
    _configure_logging()
    try:
        # The release deadline is waited for by the HTTP layer, without holding a thread
        # (dpmem_ref.serve.app: the answer leaves at start + deadline, the charge committed first).
        runtime = AgentRuntime.open(config_path, memory=memory, store_url=store_url, llm=llm, seed=seed, turn_deadline_s=None)
    except LedgerStoreError as error:
        # "ledger database NAME: why": the why, whole (it may hold ': ' itself; the name is the option's)
        text = one_line(str(error))
        why = text.split(": ", 1)[-1] if text.startswith("ledger database ") else text
        raise InputError("--store-url", "a ledger store that opens", why) from None
    runtime.channel = SerialChannel(runtime.channel)
    try:
        sock = bind(host, port)
        app = create_app(runtime, keys, mcp=mcp, workers=workers, **({} if deadline_s is None else {"deadline_s": deadline_s}))
        # The app handed over by a named factory, its interface named: otherwise uvicorn probes
        # by calling the app with no arguments and guesses from what happens.
        config = uvicorn.Config(
            lambda: app,
            factory=True,
            interface="asgi3",
            http=bounded_protocol(limits),
            # No WebSocket (no route takes one): uvicorn would hand an upgraded connection to its
            # WebSocket protocol, whose connection_lost the bounded protocol never sees, so the
            # connection would stay counted and 64 upgrade requests would lock an address out.
            ws="none",
            log_config=None,
            access_log=False,
            lifespan="on" if mcp else "off",
            server_header=False,
            timeout_keep_alive=limits.idle_s,
            timeout_graceful_shutdown=10,
            ssl_certfile=tls_cert,
            ssl_keyfile=tls_key,
        )
        host, port = sock.getsockname()[:2]
        scheme = "https" if tls_cert else "http"
        shown = f"[{host}]" if ":" in host else host
        if not is_loopback(host) and tls_cert is None:
            logging.getLogger("dpmem.serve").warning(
                "listening on a non-loopback address without TLS: tokens travel in clear (docs/serve.md, TLS)"
            )
        ready = f"dpmem serve: listening on {scheme}://{shown}:{port}"
        # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal under the handlers
        # it found: these record it, so the runtime is closed and the exit status is 0.
        stops: list[int] = []
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, lambda received, _: stops.append(received))
        _ListeningServer(config, ready, began).run(sockets=[sock])
    finally:
        runtime.close()
    logging.getLogger("dpmem.serve").info("stopped (%s)", ", ".join(signal.Signals(s).name for s in stops) or "no signal")
    return 0
