"""Durable privacy ledgers: one atomic commit per charged selection (C5 across processes).

By concept:

- protocol and facts: `contract` (the `LedgerStore` / `LedgerSession` protocols,
  `committed_charge`: the C5 re-check every backend runs at commit, the store's errors);
  `facts` (the public facts a store keeps: `SessionKey`, `ReleaseRequest`, `SlotRelease`,
  `ReleaseOutcome`, `SessionSnapshot`, and the id rules of their fields);
  `scopes` (the typed `ScopeKey` of a budget scope and the rules a charge over several scopes
  follows); `fingerprint` (the canonical interface fingerprint a database is bound to);
- codecs: `codecs` (the exact "p/q" text of a Fraction, the text encodings of turn records,
  charge sets and release rows, and the incremental load cache);
- the binding of a database to the interface it serves: `epochs` (the recorded interface,
  the epoch log and its forward-only rules, `bind`), `evolution` (which interface changes
  carry the ledgers over), `periods` (budget periods from a public clock);
- the one session template: `session` (open, rebind, charge-and-record, record-turn over a
  few backend primitives);
- evidence and verification: `chain` (the HMAC hash chain over every committed row, keyed
  outside the database), `anchor` (the sealed high-water mark), `verify` (re-derive every
  table from the chain: `dpmem ledger verify`), `checkpoint` (verification on open and
  before serving, incrementally);
- the backends, each in one place: `memory`; `sqlite/` and `postgres/` (store, session and
  schema together; `postgres/verify` its tools); `urls` (`open_ledger_store(url)` picks one);
- operations: `backup`, `restore`, `migrate` (online backup, restore with an explicit
  recorded rollback, binding of legacy files).

See docs/durability.md.

May import: `core/`, `channel/`, `mechanism/`, `parts/`, `interface`, `contract` (and psycopg, lazily, for PostgreSQL).
"""

from dpmem_ref.core.lazy import TYPE_CHECKING, attach

if TYPE_CHECKING:
    from dpmem_ref.ledger.codecs import decode_turn, encode_turn, fraction_from_text, fraction_to_text
    from dpmem_ref.ledger.contract import LedgerSession, LedgerStore, LedgerStoreError
    from dpmem_ref.ledger.facts import ReleaseOutcome, ReleaseRequest, SessionKey, SessionSnapshot, SlotRelease
    from dpmem_ref.ledger.fingerprint import interface_fingerprint
    from dpmem_ref.ledger.memory import MemoryLedgerSession, MemoryLedgerStore
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
    from dpmem_ref.ledger.sqlite.session import SQLiteLedgerSession
    from dpmem_ref.ledger.urls import open_ledger_store

# defining module -> the public names it gives this face (imported on first use)
_MODULES = {
    "dpmem_ref.ledger.contract": ("LedgerSession", "LedgerStore", "LedgerStoreError"),
    "dpmem_ref.ledger.facts": ("ReleaseOutcome", "ReleaseRequest", "SessionKey", "SessionSnapshot", "SlotRelease"),
    "dpmem_ref.ledger.fingerprint": ("interface_fingerprint",),
    "dpmem_ref.ledger.memory": ("MemoryLedgerSession", "MemoryLedgerStore"),
    "dpmem_ref.ledger.codecs": ("decode_turn", "encode_turn", "fraction_from_text", "fraction_to_text"),
    "dpmem_ref.ledger.sqlite": ("SQLiteLedgerStore",),
    "dpmem_ref.ledger.sqlite.session": ("SQLiteLedgerSession",),
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
