"""`open_ledger_store(url)`: pick a ledger backend by URL (CLI `--store-url`, Python API).

`SCHEMES` is the one table of backends, scheme -> opener, tried in order: a new backend is
one file of session-template primitives (`dpmem_ref.ledger.session`) plus one row here, and
the contract suite (tests/ledger/test_ledger_contract.py) runs on every row. The forms, their
parsing and the one redaction of a store URL live in `dpmem_ref.ledger.url_forms` (module
docstring there); the PostgreSQL backend is imported only when a postgresql:// URL is opened
(psycopg is an optional extra).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.contract import LedgerStore
from dpmem_ref.ledger.memory import MemoryLedgerStore
from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
from dpmem_ref.ledger.url_forms import FORMS, MAX_URL_LENGTH, _postgres, _Refused, _sqlite_path, redact_url


@attrs.frozen
class Scheme:
    """One backend: the URLs it claims and how to open one (raising `_Refused` for a bad form)."""

    name: str
    claims: Callable[[str], bool]
    open: Callable[[str], LedgerStore]


def _open_postgres(url: str) -> LedgerStore:
    _postgres(url)
    try:
        from dpmem_ref.ledger.postgres import PostgresLedgerStore
    except ImportError:
        raise InputError(
            "--store-url", "psycopg 3 for postgresql:// (pip install 'dpmem-ref[postgres]')", "it missing"
        ) from None
    return PostgresLedgerStore(url)


def _open_sqlite(url: str) -> LedgerStore:
    if url.startswith("sqlite:") and not url.startswith("sqlite:///"):
        raise _Refused("sqlite:///PATH (three slashes)")
    return SQLiteLedgerStore(_sqlite_path(url))


SCHEMES: tuple[Scheme, ...] = (
    Scheme("memory", lambda url: url == "memory:", lambda _: MemoryLedgerStore()),
    Scheme("postgresql", lambda url: url.lower().startswith(("postgres:", "postgresql:")), _open_postgres),
    Scheme("sqlite", lambda _: True, _open_sqlite),  # sqlite:///PATH or a plain file path: the default, last
)


def open_ledger_store(url: str) -> LedgerStore:
    """The store `url` names, in one of the documented forms (module docstring)."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH or not url.isprintable():
        raise InputError("--store-url", FORMS, "an unusable URL")
    scheme = next(s for s in SCHEMES if s.claims(url))
    try:
        return scheme.open(url)
    except _Refused as refused:
        raise InputError("--store-url", f"{FORMS} ({refused})", redact_url(url)) from None
