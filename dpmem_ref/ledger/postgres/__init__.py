"""The PostgreSQL ledger store, its session, its schema and its tools, together (one backend,
one folder). Imports psycopg (the `postgres` extra): `dpmem_ref.ledger.urls` opens it only for a
`postgresql://` URL.

- `store`: `PostgresLedgerStore`, ledgers shared by replicas on several hosts (row locks,
  REPEATABLE READ loads, retries, lost-COMMIT resolution, the anchor row or file);
- `session`: `PostgresLedgerSession`, the session template's primitives and the incremental load;
- `schema`: the tables, the chain's SQL, verification on open's reads;
- `verify`: `dpmem ledger verify / migrate / reanchor` for a PostgreSQL URL.

May import: `dpmem_ref.core`, psycopg and the ledger's shared modules; never another backend.
"""

from dpmem_ref.ledger.postgres.session import PostgresLedgerSession
from dpmem_ref.ledger.postgres.store import PostgresLedgerStore

__all__ = ["PostgresLedgerSession", "PostgresLedgerStore"]
