"""Compatibility names: the ledger stores now live in the `dpmem_ref.ledger` package."""

from dpmem_ref.ledger import (
    LedgerSession,
    LedgerStore,
    LedgerStoreError,
    MemoryLedgerStore,
    ReleaseOutcome,
    ReleaseRequest,
    SessionKey,
    SessionSnapshot,
    SlotRelease,
    SQLiteLedgerStore,
    decode_turn,
    encode_turn,
    fraction_from_text,
    fraction_to_text,
)

__all__ = [
    "LedgerSession",
    "LedgerStore",
    "LedgerStoreError",
    "MemoryLedgerStore",
    "ReleaseOutcome",
    "ReleaseRequest",
    "SQLiteLedgerStore",
    "SessionKey",
    "SessionSnapshot",
    "SlotRelease",
    "decode_turn",
    "encode_turn",
    "fraction_from_text",
    "fraction_to_text",
]
