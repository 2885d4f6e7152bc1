"""`open_ledger_store(url)`: pick a ledger backend by URL (CLI `--store-url`, Python API).

- `memory:` — in-process ledgers (forgotten on exit);
- `sqlite:///relative/path.db`, `sqlite:////absolute/path.db` or a plain file path — one
  SQLite file (one host, the embedded default);
- `postgresql://user:password@host:port/database` (or `postgres://`) — a PostgreSQL
  server shared by replicas on several hosts (extra `dpmem-ref[postgres]`).

Messages name the database with any password removed.
"""

from __future__ import annotations

import re

from dpmem_ref.errors import InputError
from dpmem_ref.ledger.contract import LedgerStore
from dpmem_ref.ledger.memory import MemoryLedgerStore
from dpmem_ref.ledger.sqlite import SQLiteLedgerStore

MAX_URL_LENGTH = 4096
_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")


def redact_url(url: str) -> str:
    """The URL with its password (if any) replaced by '***'."""
    return _PASSWORD.sub(r"\1:***@", url)


def open_ledger_store(url: str) -> LedgerStore:
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH or not url.isprintable():
        raise InputError("--store-url", "memory:, sqlite:///PATH or postgresql://...", "an unusable URL")
    if url == "memory:":
        return MemoryLedgerStore()
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from dpmem_ref.ledger.postgres import PostgresLedgerStore
        except ImportError:
            raise InputError(
                "--store-url", "psycopg 3 for postgresql:// (pip install 'dpmem-ref[postgres]')", "it missing"
            ) from None
        return PostgresLedgerStore(url)
    if url.startswith("sqlite:///"):
        return SQLiteLedgerStore(url[len("sqlite:///") :])
    if "://" in url or url.startswith("sqlite:"):
        raise InputError("--store-url", "memory:, sqlite:///PATH or postgresql://...", redact_url(url))
    return SQLiteLedgerStore(url)
