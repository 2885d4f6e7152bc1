"""The tamper-evident ledger: an HMAC hash chain over every committed row.

Every write transaction of a durable store appends ONE event to a single append-only
table (`chain` in SQLite, `dpmem_chain` in PostgreSQL), in the same transaction as the rows
it describes. Event `seq` (1, 2, 3, ... without gaps) commits to its predecessor:

    mac_seq = HMAC-SHA256(key, "dpmem-chain-v1" | seq | kind | mac_{seq-1} | body)

with mac_0 = 64 zeros. `body` is canonical JSON of everything the transaction committed
(kind `charge`: the release row and the ledgers after it, of every scope it debits;
`turn`: the turn row with the sha256 of its record; `open`: a session's caps; `bind`: the
interface fingerprint; `rebind`: an interface change carrying the ledgers over, with its
meta rows; `genesis`: the key id; `rollback`: a restore past the high-water mark;
`migrate`: the binding of a database written before the chain). A new kind of committed row is one more
kind of event: `dpmem_ref.ledger.verify` re-derives every table from the chain alone and
compares, so nobody without the key can edit, delete, insert or reorder a row.

The key lives outside the database: `DPMEM_LEDGER_KEY` (the secret itself, at least 16
bytes) or `DPMEM_LEDGER_KEY_FILE` (a file holding it), never both. Without either, the
chain is computed with a public key (`UNKEYED`) and marked so in its genesis event: it
still catches corruption and inconsistent edits, but anyone can forge it. A database is
chained with one key for its lifetime; opening it with another (or none) is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.files import read_file
from dpmem_ref.ledger.codecs import fraction_to_text
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.facts import SessionKey, SlotRelease

ENV_KEY = "DPMEM_LEDGER_KEY"
ENV_KEY_FILE = "DPMEM_LEDGER_KEY_FILE"
ENV_DEV_KEY = "DPMEM_LEDGER_DEV_KEY"
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 4096
UNKEYED = b"dpmem-ledger-unkeyed-public-v1"
GENESIS_MAC = "0" * 64
MAX_BODY_BYTES = 1 << 16
_DOMAIN = b"dpmem-chain-v1"


@attrs.frozen(repr=False)
class ChainKey:
    """The HMAC key of a ledger chain (never printed: repr shows its public id only)."""

    secret: bytes = attrs.field(repr=False)
    keyed: bool

    def __repr__(self) -> str:
        return f"ChainKey(key_id={self.key_id!r})"

    @property
    def key_id(self) -> str:
        """A public name of the key (HMAC of a constant: reveals nothing about it)."""
        if not self.keyed:
            return "unkeyed"
        return hmac.new(self.secret, b"dpmem key id", hashlib.sha256).hexdigest()[:16]

    def mac(self, seq: int, kind: str, previous: str, body: str) -> str:
        message = b"|".join((_DOMAIN, str(seq).encode(), kind.encode(), previous.encode(), body.encode("utf-8")))
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()


def unkeyed() -> ChainKey:
    return ChainKey(secret=UNKEYED, keyed=False)


def _checked_secret(secret: bytes, where: str) -> bytes:
    if not MIN_KEY_BYTES <= len(secret) <= MAX_KEY_BYTES:
        raise InputError(where, f"a secret of {MIN_KEY_BYTES}..{MAX_KEY_BYTES} bytes", f"{len(secret)} bytes")
    return secret


def key_from_environment(environ: Mapping[str, str] | None = None) -> ChainKey:
    """The chain key from DPMEM_LEDGER_KEY or DPMEM_LEDGER_KEY_FILE. Keys are explicit: with
    neither, a durable ledger is refused unless DPMEM_LEDGER_DEV_KEY=1 asks for the public
    development key (printed at start by the commands: `DEV_KEY_NOTICE`; recorded in the
    chain: its genesis names key id `unkeyed`)."""
    env = os.environ if environ is None else environ
    text, file = env.get(ENV_KEY), env.get(ENV_KEY_FILE)
    if text is not None and file is not None:
        raise InputError(ENV_KEY, f"either {ENV_KEY} or {ENV_KEY_FILE}, not both", "both set")
    if text is not None:
        return ChainKey(secret=_checked_secret(text.encode("utf-8", "surrogateescape"), ENV_KEY), keyed=True)
    if file is not None:
        raw = read_file(file, MAX_KEY_BYTES + 2, ENV_KEY_FILE, "key file") or b""
        return ChainKey(secret=_checked_secret(raw.rstrip(b"\r\n"), ENV_KEY_FILE), keyed=True)
    if env.get(ENV_DEV_KEY) == "1":
        return unkeyed()
    raise InputError(
        ENV_KEY,
        f"a key for a durable ledger ({ENV_KEY} or {ENV_KEY_FILE}; {ENV_DEV_KEY}=1 runs on the public development key)",
        "none set",
    )


def dev_key_notice(key: ChainKey) -> str | None:
    """The line a command prints at start when it runs on the development key (else None)."""
    if key.keyed:
        return None
    return (
        f"dpmem: warning: {ENV_DEV_KEY}=1: the ledger chain uses the public development key (key id unkeyed, "
        f"recorded in its genesis event); anyone can forge it: set {ENV_KEY} or {ENV_KEY_FILE} in production"
    )


def canonical(data: Mapping[str, Any]) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    if len(text) > MAX_BODY_BYTES:
        raise InputError("chain event", f"at most {MAX_BODY_BYTES} bytes", len(text))
    return text


def _fractions(values: Mapping[str, Fraction]) -> dict[str, str]:
    return {a: fraction_to_text(v) for a, v in sorted(values.items())}


def genesis_body(key: ChainKey, schema: str, database_id: str | None = None) -> str:
    """The first event: the key's public id, the schema and the database identity (random,
    so two ledgers under one key share no event: every later MAC commits to it)."""
    return canonical({"key_id": key.key_id, "schema": schema, "database_id": database_id or new_database_id()})


def bind_body(fingerprint: str) -> str:
    return canonical({"fingerprint": fingerprint})


def open_body(key: SessionKey, caps: Mapping[str, Fraction]) -> str:
    return canonical({"user": key.user, "interaction": key.interaction, "caps": _fractions(caps)})


def release_data(row: SlotRelease) -> dict[str, Any]:
    """A release row as chain data (the columns `decode_release` reads, seq included)."""
    return {
        "seq": row.seq,
        "release_id": row.release_id,
        "turn_id": row.turn_id,
        "index": row.index,
        "slot": row.slot,
        "view": row.view,
        "admitted": row.admitted,
        "charge_set": sorted(row.charge_set),
        "epsilon": fraction_to_text(row.epsilon),
    }


def charge_body(
    key: SessionKey,
    row: SlotRelease,
    ledgers: Mapping[str, Fraction],
    scopes: Sequence[tuple[SessionKey, Mapping[str, Fraction]]] = (),
) -> str:
    """A charge: the release row, this session's ledgers after it and, for a multi-scope
    charge (budget scopes: one transaction debits several sessions), every other scope's
    ledgers after it (replay applies the same eps to each scope's charge set)."""
    data: dict[str, Any] = {
        "user": key.user,
        "interaction": key.interaction,
        "release": release_data(row),
        "ledgers": _fractions(ledgers),
    }
    if scopes:
        data["scopes"] = [{"user": k.user, "interaction": k.interaction, "ledgers": _fractions(v)} for k, v in scopes]
    return canonical(data)


def rebind_body(
    expected: str | None,
    fingerprint: str,
    meta: Mapping[str, str],
    sessions: Sequence[tuple[SessionKey, Mapping[str, Fraction], Mapping[str, Fraction]]] = (),
) -> str:
    """An interface change that carries the ledgers over: the fingerprint compare-and-set,
    the extra meta rows written, and per session its (spent, caps) after the change."""
    return canonical(
        {
            "expected": expected,
            "fingerprint": fingerprint,
            "meta": dict(sorted(meta.items())),
            "sessions": [
                {"user": k.user, "interaction": k.interaction, "ledgers": _fractions(spent), "caps": _fractions(caps)}
                for k, spent, caps in sessions
            ],
        }
    )


def record_digest(record_text: str) -> str:
    return hashlib.sha256(record_text.encode("utf-8", "surrogateescape")).hexdigest()


def turn_body(key: SessionKey, seq: int, turn_id: str, record_text: str) -> str:
    return canonical(
        {
            "user": key.user,
            "interaction": key.interaction,
            "seq": seq,
            "turn_id": turn_id,
            "record_sha256": record_digest(record_text),
        }
    )


def reanchor_body(previous: str, head: HighWater) -> str:
    """An explicit re-anchoring (`dpmem ledger reanchor`): what the anchor was, and the head it moves to."""
    return canonical({"previous": previous, "to_seq": head.seq, "to_mac": head.mac})


def rollback_body(from_seq: int, from_mac: str, to_seq: int, to_mac: str) -> str:
    return canonical({"from_seq": from_seq, "from_mac": from_mac, "to_seq": to_seq, "to_mac": to_mac})


def check_genesis(database: str, key: ChainKey, body: str) -> None:
    """A database is chained with one key for its lifetime: refuse another (or none)."""
    try:
        stored = json.loads(body).get("key_id")
    except (ValueError, AttributeError):
        raise LedgerStoreError(f"ledger database {database}: unreadable chain genesis") from None
    if stored != key.key_id:
        raise LedgerStoreError(
            f"ledger database {database}: chained with key id {str(stored)[:16]}, but the configured key "
            f"({ENV_KEY} / {ENV_KEY_FILE}) has key id {key.key_id}"
        )


# ---------------------------------------------------------------- chain heads and the database identity

_ID_CHARS = frozenset("0123456789abcdef")


@attrs.frozen
class HighWater:
    """A chain head: (seq, mac). The anchor is the newest one a database is known to have committed."""

    seq: int
    mac: str


def new_database_id() -> str:
    """A random 128-bit database identity, fixed in the genesis event."""
    return secrets.token_hex(16)


def database_identity(genesis_body_text: str, genesis_mac: str) -> str:
    """The identity a chain's genesis fixes: its `database_id` (a genesis written before
    identities existed has none: its MAC stands in, shared by every such ledger of one key)."""
    try:
        found = json.loads(genesis_body_text).get("database_id")
    except (ValueError, AttributeError, RecursionError):
        found = None
    if isinstance(found, str) and len(found) == 32 and set(found) <= _ID_CHARS:
        return found
    return "genesis-" + genesis_mac[:32]


def rows_identity(chain: Sequence[Sequence[Any]]) -> str | None:
    """The identity the genesis row (seq, kind, body, mac) of a chain fixes (None: unreadable)."""
    first = chain[0] if chain else ()
    ok = len(first) == 4 and isinstance(first[2], str) and isinstance(first[3], str)
    return database_identity(first[2], first[3]) if ok else None
