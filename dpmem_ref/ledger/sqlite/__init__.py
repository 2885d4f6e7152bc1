"""The SQLite ledger store, its session and its schema, together (one backend, one folder).

- `store`: `SQLiteLedgerStore`, ledgers in one SQLite file shared by every process of one
  host (WAL, BEGIN IMMEDIATE writes, the anchor beside the file, verification on open and
  before serving);
- `session`: `SQLiteLedgerSession`, the session template's primitives and the incremental load;
- `schema`: the tables, the foreign-schema check, the chain's SQL and driver errors in words.

May import: `dpmem_ref.core` and the ledger's shared modules (`contract`, `codecs`, `chain`,
`anchor`, `checkpoint`, `verify`, `scopes`, `session`); never another backend.
"""

from dpmem_ref.ledger.sqlite.session import SQLiteLedgerSession
from dpmem_ref.ledger.sqlite.store import SQLiteLedgerStore

__all__ = ["SQLiteLedgerSession", "SQLiteLedgerStore"]
