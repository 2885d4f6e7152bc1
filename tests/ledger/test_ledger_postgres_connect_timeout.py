"""A PostgreSQL server that accepts a connection and never answers is refused in bounded time:
the store and `dpmem ledger verify`, `migrate` and `reanchor` connect with their own timeout
(`dpmem_ref.ledger.postgres.schema.CONNECT_TIMEOUT_S`, or the store's `connect_timeout_s`),
which overrides libpq's PGCONNECT_TIMEOUT, and say so in one line naming the database.

A relay in front of the test server passes the first connections through (reanchor verifies
the chain on a connection of its own before the one that writes) and stalls the next one: it is
accepted and never answered. Here the timeout is lowered to 2 s (the least libpq honours) and
PGCONNECT_TIMEOUT set to 8 s, so a connection made without the timeout would wait 8 s."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction

import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.ledger import LedgerStoreError, ReleaseRequest
from dpmem_ref.ledger.chain import ChainKey
from dpmem_ref.ledger.postgres import PostgresLedgerStore
from dpmem_ref.ledger.postgres import verify as postgres_verify

KEY = ChainKey(secret=b"postgres-timeout-key-0123456789a", keyed=True)
TIMEOUT_S = 2
ENVIRONMENT_TIMEOUT_S = 8


class StallingRelay(postgres_server.RelayListener):
    """A Unix socket that relays its first `forwarded` connections to the test server and
    accepts every later one without ever answering it."""

    def __init__(self, database_url: str, forwarded: int) -> None:
        super().__init__(database_url, "dpmem-stall-")
        self.forwarded = forwarded
        self.held: list[socket.socket] = []
        self.start()

    def relay(self, client: socket.socket) -> None:
        if self.forwarded <= 0:
            self.held.append(client)  # accepted, never answered
            return
        self.forwarded -= 1
        upstream = self.to_server()
        threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for each in (source, target):
            try:
                each.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()
        for each in self.held:
            each.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _charged_ledger() -> str:
    url = postgres_server.new_database()
    ledger_store = PostgresLedgerStore(url, key=KEY)
    try:
        opened = ledger_store.open_session("user", "chat", {"diabetes": Fraction(4)})
        opened.charge_and_record(
            ReleaseRequest("a", "b", 0, "food", "low", "balanced", frozenset({"diabetes"}), Fraction(1, 3))
        )
    finally:
        ledger_store.close()
    return url


OPERATIONS: dict[str, tuple[int, Callable[[str], object]]] = {
    # name: (connections that get through before the stalled one, the operation on the relay's URL)
    "store": (0, lambda url: PostgresLedgerStore(url, connect_timeout_s=TIMEOUT_S, key=KEY)),
    "verify": (0, lambda url: postgres_verify.verify_postgres(url, KEY)),
    "migrate": (0, lambda url: postgres_verify.migrate_postgres(url, "0" * 64, key=KEY)),
    "reanchor": (1, lambda url: postgres_verify.reanchor_postgres(url, KEY)),
}


@pytest.fixture
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(postgres_verify, "CONNECT_TIMEOUT_S", TIMEOUT_S)
    monkeypatch.setenv("PGCONNECT_TIMEOUT", str(ENVIRONMENT_TIMEOUT_S))
    yield


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_postgres_a_server_that_never_answers_is_refused_after_the_connect_timeout(
    operation: str, short_timeout: None
) -> None:
    forwarded, run = OPERATIONS[operation]
    relay = StallingRelay(_charged_ledger(), forwarded)
    try:
        started = time.monotonic()
        with pytest.raises(LedgerStoreError) as refused:
            run(relay.url)
        waited = time.monotonic() - started
    finally:
        relay.close()
    assert (
        str(refused.value) == f"ledger database {postgres_server.shown(relay.url)}: cannot reach the server (timeout)"
    )
    # its own timeout, not PGCONNECT_TIMEOUT's (a connection made without one waits 8 s)
    assert TIMEOUT_S - 0.5 < waited < ENVIRONMENT_TIMEOUT_S - 2, waited
