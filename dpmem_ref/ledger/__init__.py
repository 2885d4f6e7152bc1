"""Durable privacy ledgers: one atomic commit per charged selection (C5 across processes).

- `contract`: the public release facts, the `LedgerStore` / `LedgerSession` protocols,
  and `committed_charge` (the C5 re-check every backend runs at commit);
- `memory`, `sqlite`, `postgres`: the backends (one contract suite for all,
  tests/ledger/test_ledger_contract.py); `open_ledger_store(url)` picks one by URL;
- `fingerprint`: the canonical interface fingerprint a ledger database is bound to;
- `chain`, `replay`: the tamper-evident ledger (an HMAC hash chain over every committed
  row, keyed outside the database; `replay` re-derives every table from it);
- `backup`, `restore`, `postgres_verify`: online backup, verification, restore with an
  explicit recorded rollback, and migration of legacy files.

See docs/durability.md.

May import: `core/`, `channel/`, `mechanism/`, `parts/`, `interface`, `contract` (and psycopg, lazily, for PostgreSQL).
"""

from dpmem_ref.core.lazy import TYPE_CHECKING, attach

if TYPE_CHECKING:
    from dpmem_ref.ledger.contract import (
        LedgerSession,
        LedgerStore,
        LedgerStoreError,
        ReleaseOutcome,
        ReleaseRequest,
        SessionKey,
        SessionSnapshot,
        SlotRelease,
        fraction_from_text,
        fraction_to_text,
    )
    from dpmem_ref.ledger.fingerprint import interface_fingerprint
    from dpmem_ref.ledger.memory import MemoryLedgerSession, MemoryLedgerStore
    from dpmem_ref.ledger.records import decode_turn, encode_turn
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
    from dpmem_ref.ledger.sqlite_session import SQLiteLedgerSession
    from dpmem_ref.ledger.urls import open_ledger_store

# defining module -> the public names it gives this face (imported on first use)
_MODULES = {
    "dpmem_ref.ledger.contract": (
        "LedgerSession",
        "LedgerStore",
        "LedgerStoreError",
        "ReleaseOutcome",
        "ReleaseRequest",
        "SessionKey",
        "SessionSnapshot",
        "SlotRelease",
        "fraction_from_text",
        "fraction_to_text",
    ),
    "dpmem_ref.ledger.fingerprint": ("interface_fingerprint",),
    "dpmem_ref.ledger.memory": ("MemoryLedgerSession", "MemoryLedgerStore"),
    "dpmem_ref.ledger.records": ("decode_turn", "encode_turn"),
    "dpmem_ref.ledger.sqlite": ("SQLiteLedgerStore",),
    "dpmem_ref.ledger.sqlite_session": ("SQLiteLedgerSession",),
    "dpmem_ref.ledger.urls": ("open_ledger_store",),
}

__all__ = [
    "LedgerSession",
    "LedgerStore",
    "LedgerStoreError",
    "MemoryLedgerSession",
    "MemoryLedgerStore",
    "ReleaseOutcome",
    "ReleaseRequest",
    "SQLiteLedgerSession",
    "SQLiteLedgerStore",
    "SessionKey",
    "SessionSnapshot",
    "SlotRelease",
    "decode_turn",
    "encode_turn",
    "fraction_from_text",
    "fraction_to_text",
    "interface_fingerprint",
    "open_ledger_store",
]

__getattr__, __dir__ = attach(__name__, _MODULES, __all__)
