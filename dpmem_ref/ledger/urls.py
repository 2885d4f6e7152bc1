"""`open_ledger_store(url)`: pick a ledger backend by URL (CLI `--store-url`, Python API).

The forms, their parsing and the one redaction of a store URL live in
`dpmem_ref.ledger.url_forms` (module docstring there); the PostgreSQL backend is imported
only when a postgresql:// URL is opened (psycopg is an optional extra).
"""

from __future__ import annotations

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.contract import LedgerStore
from dpmem_ref.ledger.memory import MemoryLedgerStore
from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
from dpmem_ref.ledger.url_forms import FORMS, MAX_URL_LENGTH, _postgres, _Refused, _sqlite_path, redact_url


def open_ledger_store(url: str) -> LedgerStore:
    """The store `url` names, in one of the documented forms (module docstring)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH or not url.isprintable():
        raise InputError("--store-url", FORMS, "an unusable URL")
    if url == "memory:":
        return MemoryLedgerStore()
    try:
        if url.lower().startswith(("postgres:", "postgresql:")):
            _postgres(url)
            try:
                from dpmem_ref.ledger.postgres import PostgresLedgerStore
            except ImportError:
                raise InputError(
                    "--store-url", "psycopg 3 for postgresql:// (pip install 'dpmem-ref[postgres]')", "it missing"
                ) from None
            return PostgresLedgerStore(url)
        if url.startswith("sqlite:") and not url.startswith("sqlite:///"):
            raise _Refused("sqlite:///PATH (three slashes)")
        return SQLiteLedgerStore(_sqlite_path(url))
    except _Refused as refused:
        raise InputError("--store-url", f"{FORMS} ({refused})", redact_url(url)) from None
