"""Verification on open, incrementally: a sealed checkpoint of what the chain proved so far.

Opening a durable store (SQLite, PostgreSQL) verifies the chain from the last checkpoint to
the head, O(new events) (`verify_tail`), with the same walk, fold and comparison as
`dpmem ledger verify` (`dpmem_ref.ledger.replay`): every new event's MAC, C3 and C5 on every
new charge, every ledger and meta row, the release and turn rows newer than the checkpoint,
and the tables' row counts. The checkpoint (the derived caps, ledgers, meta, counts) is a
cache, sealed with the key and the database identity: a missing, forged, foreign or
off-chain one is ignored and verification starts from the genesis. What it does not cover:
an edit of a release or turn row older than the checkpoint that keeps the row counts
(history, not a budget: `dpmem ledger verify` replays everything and names it).
"""

from __future__ import annotations

import hmac
import json
from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.ledger.chain import GENESIS_MAC, ChainKey
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.replay import LedgerRows, Row, _Bad, _compare, _derive, _State, _walk


@attrs.frozen
class Checkpoint:
    """What an earlier verification proved, up to chain event `seq` (MAC `mac`): the derived
    state (fingerprint, meta, caps, ledgers) and the release and turn rows it covered (count,
    newest seq). Sealed with the key and the database identity (`checkpoint_text`), so a
    checkpoint nobody with the key wrote, or another database's, is never trusted."""

    seq: int
    mac: str
    data: dict[str, Any]


def _fraction_map(values: dict[str, Fraction]) -> dict[str, str]:
    return {a: f"{v.numerator}/{v.denominator}" for a, v in sorted(values.items())}


def _checkpoint_data(state: _State, counts: tuple[int, int], newest: tuple[int, int]) -> dict[str, Any]:
    return {
        "fingerprint": state.fingerprint,
        "key_id": state.key_id,
        "migrated": state.migrated,
        "meta": dict(sorted(state.meta.items())),
        "sessions": [
            [user, interaction, _fraction_map(state.caps[(user, interaction)]), _fraction_map(state.spent[(user, interaction)])]
            for user, interaction in sorted(state.caps)
        ],
        "rollbacks": list(state.rollbacks),
        "counts": list(counts),
        "newest": list(newest),
    }


def _restore(data: dict[str, Any]) -> tuple[_State, tuple[int, int], tuple[int, int]]:
    state = _State(fingerprint=data["fingerprint"], key_id=data["key_id"], migrated=bool(data["migrated"]))
    state.meta = {str(k): str(v) for k, v in data["meta"].items()}
    for user, interaction, caps, spent in data["sessions"]:
        state.caps[(user, interaction)] = {a: Fraction(v) for a, v in caps.items()}
        state.spent[(user, interaction)] = {a: Fraction(v) for a, v in spent.items()}
    state.rollbacks = [str(r) for r in data["rollbacks"]]
    counts, newest = data["counts"], data["newest"]
    return state, (int(counts[0]), int(counts[1])), (int(newest[0]), int(newest[1]))


def _sealed(key: ChainKey, identity: str, seq: int, mac: str, data: dict[str, Any]) -> str:
    text = json.dumps({"database_id": identity, "data": data}, sort_keys=True, separators=(",", ":"))
    return key.mac(seq, "checkpoint", mac, text)


def checkpoint_text(key: ChainKey, identity: str, checkpoint: Checkpoint) -> str:
    seal = _sealed(key, identity, checkpoint.seq, checkpoint.mac, checkpoint.data)
    return json.dumps({"seq": checkpoint.seq, "mac": checkpoint.mac, "data": checkpoint.data, "seal": seal})


def parse_checkpoint(key: ChainKey, identity: str, text: object) -> Checkpoint | None:
    """A checkpoint this key sealed for this database, or None (missing, unreadable, forged,
    another database's: verification then starts from the genesis; never trusted blindly)."""
    if not isinstance(text, str):
        return None
    try:
        stored = json.loads(text)
        found = Checkpoint(seq=int(stored["seq"]), mac=str(stored["mac"]), data=dict(stored["data"]))
        expected = _sealed(key, identity, found.seq, found.mac, found.data)
        if not hmac.compare_digest(str(stored["seal"]), expected):
            return None
        _restore(found.data)  # readable, or not used
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, ZeroDivisionError):
        return None
    return found


@attrs.frozen
class Tail:
    """What an open reads to verify incrementally: the chain after the checkpoint, every meta
    and ledger row, the release and turn rows newer than the checkpoint's, and the tables'
    row counts (a deleted or inserted older row changes them)."""

    chain: tuple[Row, ...]
    meta: tuple[Row, ...]
    ledgers: tuple[Row, ...]
    releases: tuple[Row, ...]
    turns: tuple[Row, ...]
    counts: tuple[int, int]


def verify_tail(key: ChainKey, start: Checkpoint | None, tail: Tail) -> Checkpoint:
    """Verify on open, O(new events): the MACs from the checkpoint's event to the head, the
    events folded into the checkpoint's state (C3: eps > 0 on a charge, C5: L_a <= B_a after
    every charge), every ledger and meta row and every newer release and turn row compared
    with what the chain committed, and the row counts. Returns the new checkpoint; raises
    LedgerStoreError naming the first problem."""
    try:
        if start is None:
            state, counts, newest = _State(), (0, 0), (0, 0)
            first, previous = 1, GENESIS_MAC
        else:
            state, counts, newest = _restore(start.data)
            first, previous = start.seq + 1, start.mac
        _walk(tail.chain, key, first, previous)
        state = _derive(tail.chain, state)
        for table, derived, after in (("releases", state.releases, newest[0]), ("turns", state.turns, newest[1])):
            if any(seq <= after for seq in derived):
                raise _Bad(f"{table}: a new event names seq {min(derived)}, not after the verified seq {after}")
        _compare(LedgerRows(tail.meta, (), tail.ledgers, tail.releases, tail.turns), state)
        total = (counts[0] + len(state.releases), counts[1] + len(state.turns))
        if tuple(tail.counts) != total:
            raise _Bad(f"releases / turns: {tail.counts[0]} / {tail.counts[1]} rows, the chain committed {total[0]} / {total[1]}")
        newest = (max(state.releases, default=newest[0]), max(state.turns, default=newest[1]))
        state.releases, state.turns = {}, {}
    except _Bad as bad:
        raise LedgerStoreError(f"verification on open failed: {bad}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise LedgerStoreError("verification on open failed: unreadable row (corrupted values)") from None
    if tail.chain:
        head_seq, head_mac = int(tail.chain[-1][0]), str(tail.chain[-1][3])
    elif start is not None:
        head_seq, head_mac = start.seq, start.mac
    else:
        raise LedgerStoreError("verification on open failed: no chain")
    return Checkpoint(head_seq, head_mac, _checkpoint_data(state, total, newest))


def checkpoint_after(start: Checkpoint | None) -> tuple[int, int, int]:
    """(chain seq, newest release seq, newest turn seq) a checkpoint covers (zeros: none)."""
    if start is None:
        return 0, 0, 0
    newest = start.data["newest"]
    return start.seq, int(newest[0]), int(newest[1])
