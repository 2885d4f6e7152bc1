"""Verification on open and before every served row: a sealed checkpoint of what the chain proved.

Opening a durable store (SQLite, PostgreSQL) verifies the chain from the last checkpoint to
the head, O(new events) (`verify_tail`), with the same walk, fold and comparison as
`dpmem ledger verify` (`dpmem_ref.ledger.verify`): every new event's MAC, C3 and C5 on every
new charge, every ledger and meta row, the release and turn rows newer than the checkpoint,
and the tables' row counts. The checkpoint (the derived caps, ledgers, meta, counts, and per
scope a digest of its release and turn rows) is a cache, sealed with the key and the database
identity: a missing, forged, foreign or off-chain one is ignored and verification starts from
the genesis.

After the open the store keeps what it verified in memory (`Verified`) and moves it forward
with the chain (`Verified.advance`, O(events committed since), in the same snapshot as the
rows it then serves): a load compares the scope's ledgers with the folded state and the
digest of every release and turn row it serves with the scope's digest (so an edit of a row
older than the checkpoint is refused on the load that would serve it, never served), and a
charge compares the ledgers it reads under the write lock (an edited ledger never admits a
release). Why a digest is enough: rows are served in seq order, and the verified digest of a
scope is the hash chain, in seq order, of the rows the chain committed to it, so an equal
digest and count mean the same rows (SHA-256 collision resistance).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.ledger.chain import GENESIS_MAC, ChainKey
from dpmem_ref.ledger.codecs import fraction_to_text
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.verify import (
    Row,
    _Bad,
    _compare_ledgers,
    _compare_meta,
    _compare_rows,
    _derive,
    _release_row,
    _State,
    _turn_row,
    _walk,
)

ScopeRows = tuple[int, str, int, str]  # (release rows, their digest, turn rows, their digest)
NO_ROWS: ScopeRows = (0, "", 0, "")


def _extend(digest: str, row: tuple[Any, ...]) -> str:
    """The hash chain of a scope's rows in seq order: H(previous digest || canonical row)."""
    text = json.dumps(row, default=str, separators=(",", ":"))
    return hashlib.sha256(f"{digest}\n{text}".encode()).hexdigest()


def served_rows(
    served: ScopeRows, key: SessionKey, release_rows: Sequence[Sequence[Any]], turn_rows: Sequence[Sequence[Any]]
) -> ScopeRows:
    """`served` extended with the rows a load serves, read the way verification reads them:
    releases as (seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, eps),
    turns as (seq, turn_id, record), each in seq order."""
    releases, release_digest, turns, turn_digest = served
    scope = (key.user, key.interaction)
    try:
        for row in release_rows:
            release_digest = _extend(release_digest, _release_row((*scope, *row), f"releases seq {row[0]}"))
            releases += 1
        for row in turn_rows:
            turn_digest = _extend(turn_digest, _turn_row((*scope, *row), f"turns seq {row[0]}"))
            turns += 1
    except _Bad as bad:
        raise LedgerStoreError(f"a served row is unreadable: {bad}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise LedgerStoreError("a served row is unreadable (corrupted values)") from None
    return releases, release_digest, turns, turn_digest


@attrs.frozen
class Checkpoint:
    """What an earlier verification proved, up to chain event `seq` (MAC `mac`): the derived
    state (fingerprint, meta, caps, ledgers), the release and turn rows it covered (count,
    newest seq, per scope a digest). Sealed with the key and the database identity
    (`checkpoint_text`), so a checkpoint nobody with the key wrote, or another database's, is
    never trusted."""

    seq: int
    mac: str
    data: dict[str, Any]


def _fraction_map(values: dict[str, Fraction]) -> dict[str, str]:
    return {a: fraction_to_text(v) for a, v in sorted(values.items())}


@attrs.define
class Verified:
    """What this process has verified of the chain, up to event `seq` (MAC `mac`): the folded
    state, the row counts and newest release and turn seqs, and each scope's row digests.
    Only `advance` moves it, and only over events whose MACs continue from `mac`."""

    seq: int
    mac: str
    state: _State
    counts: tuple[int, int]
    newest: tuple[int, int]
    scopes: dict[tuple[str, str], ScopeRows]

    @classmethod
    def genesis(cls) -> Verified:
        return cls(0, GENESIS_MAC, _State(), (0, 0), (0, 0), {})

    @classmethod
    def restore(cls, checkpoint: Checkpoint) -> Verified:
        """Raises KeyError / ValueError / TypeError on an unreadable checkpoint."""
        data = checkpoint.data
        state = _State(fingerprint=data["fingerprint"], key_id=data["key_id"], migrated=bool(data["migrated"]))
        state.meta = {str(k): str(v) for k, v in data["meta"].items()}
        for user, interaction, caps, spent in data["sessions"]:
            state.caps[(user, interaction)] = {a: Fraction(v) for a, v in caps.items()}
            state.spent[(user, interaction)] = {a: Fraction(v) for a, v in spent.items()}
        state.rollbacks = [str(r) for r in data["rollbacks"]]
        scopes = {(str(u), str(i)): (int(r), str(rd), int(t), str(td)) for u, i, r, rd, t, td in data["scopes"]}
        counts, newest = data["counts"], data["newest"]
        return cls(
            checkpoint.seq, checkpoint.mac, state,
            (int(counts[0]), int(counts[1])), (int(newest[0]), int(newest[1])), scopes,
        )  # fmt: skip

    def checkpoint(self) -> Checkpoint:
        state = self.state
        data = {
            "fingerprint": state.fingerprint,
            "key_id": state.key_id,
            "migrated": state.migrated,
            "meta": dict(sorted(state.meta.items())),
            "sessions": [
                [
                    user,
                    interaction,
                    _fraction_map(state.caps[(user, interaction)]),
                    _fraction_map(state.spent[(user, interaction)]),
                ]
                for user, interaction in sorted(state.caps)
            ],
            "rollbacks": list(state.rollbacks),
            "counts": list(self.counts),
            "newest": list(self.newest),
            "scopes": [[*scope, *rows] for scope, rows in sorted(self.scopes.items())],
        }
        return Checkpoint(self.seq, self.mac, data)

    def advance(self, key: ChainKey, chain: tuple[Row, ...], releases: tuple[Row, ...], turns: tuple[Row, ...]) -> None:
        """Fold the events after `seq` (`chain`: every event after it, in order) into the
        state, compare the release and turn rows newer than `newest` (`releases`, `turns`:
        every such row, read in the same snapshot) with what they committed, and extend the
        scope digests, counts and newest seqs. Raises _Bad naming the first problem, after
        which this object is spent (its owner refuses from then on: fail closed)."""
        _walk(chain, key, self.seq + 1, self.mac)
        state = _derive(chain, self.state)
        for table, derived, after in (
            ("releases", state.releases, self.newest[0]),
            ("turns", state.turns, self.newest[1]),
        ):
            if any(seq <= after for seq in derived):
                raise _Bad(f"{table}: a new event names seq {min(derived)}, not after the verified seq {after}")
        _compare_rows("releases", releases, state.releases, _release_row)
        _compare_rows("turns", turns, state.turns, _turn_row)
        scopes = self.scopes
        for seq in sorted(state.releases):
            row = state.releases[seq]
            r, rd, t, td = scopes.get((row[0], row[1]), NO_ROWS)
            scopes[(row[0], row[1])] = (r + 1, _extend(rd, row), t, td)
        for seq in sorted(state.turns):
            row = state.turns[seq]
            r, rd, t, td = scopes.get((row[0], row[1]), NO_ROWS)
            scopes[(row[0], row[1])] = (r, rd, t + 1, _extend(td, row))
        self.counts = (self.counts[0] + len(state.releases), self.counts[1] + len(state.turns))
        self.newest = (max(state.releases, default=self.newest[0]), max(state.turns, default=self.newest[1]))
        if chain:
            self.seq, self.mac = int(chain[-1][0]), str(chain[-1][3])
        state.releases, state.turns = {}, {}

    def check_scope(self, key: SessionKey, ledgers: Mapping[str, Fraction], caps: Mapping[str, Fraction] | None,
                    served: ScopeRows | None = None) -> None:  # fmt: skip
        """The scope's ledgers (and caps), and the digest of every row served to it so far,
        against what the chain committed. Raises _Bad."""
        scope = (key.user, key.interaction)
        where = f"scope ({key.user}, {key.interaction})"
        if scope not in self.state.caps:
            raise _Bad(f"{where}: its ledgers are not in the chain (inserted)")
        if dict(ledgers) != self.state.spent[scope] or (caps is not None and dict(caps) != self.state.caps[scope]):
            raise _Bad(f"{where}: its ledgers differ from the chain (L_a = sum of committed charges, B_a as opened)")
        if served is not None:
            committed = self.scopes.get(scope, NO_ROWS)
            for name, index in (("release", 0), ("turn", 2)):
                if served[index : index + 2] != committed[index : index + 2]:
                    raise _Bad(
                        f"{where}: its {name} rows ({served[index]} served, {committed[index]} committed) "
                        "differ from their chain events (edited, inserted or deleted)"
                    )


def _sealed(key: ChainKey, identity: str, seq: int, mac: str, data: dict[str, Any]) -> str:
    text = json.dumps({"database_id": identity, "data": data}, sort_keys=True, separators=(",", ":"))
    return key.mac(seq, "checkpoint", mac, text)


def checkpoint_text(key: ChainKey, identity: str, checkpoint: Checkpoint) -> str:
    seal = _sealed(key, identity, checkpoint.seq, checkpoint.mac, checkpoint.data)
    return json.dumps({"seq": checkpoint.seq, "mac": checkpoint.mac, "data": checkpoint.data, "seal": seal})


def parse_checkpoint(key: ChainKey, identity: str, text: object) -> Checkpoint | None:
    """A checkpoint this key sealed for this database, or None (missing, unreadable, forged,
    another database's, or of an older layout: verification then starts from the genesis;
    never trusted blindly)."""
    if not isinstance(text, str):
        return None
    try:
        stored = json.loads(text)
        found = Checkpoint(seq=int(stored["seq"]), mac=str(stored["mac"]), data=dict(stored["data"]))
        expected = _sealed(key, identity, found.seq, found.mac, found.data)
        if not hmac.compare_digest(str(stored["seal"]), expected):
            return None
        Verified.restore(found)  # readable, or not used
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


def verify_tail(key: ChainKey, start: Checkpoint | None, tail: Tail) -> Verified:
    """Verify on open, O(new events): the MACs from the checkpoint's event to the head, the
    events folded into the checkpoint's state (C3: eps > 0 on a charge, C5: L_a <= B_a after
    every charge), every ledger and meta row and every newer release and turn row compared
    with what the chain committed, and the row counts. Returns what is now verified; raises
    LedgerStoreError naming the first problem."""
    try:
        verified = Verified.genesis() if start is None else Verified.restore(start)
        verified.advance(key, tail.chain, tail.releases, tail.turns)
        _compare_meta(tail.meta, verified.state)
        _compare_ledgers(tail.ledgers, verified.state)
        if tuple(tail.counts) != verified.counts:
            raise _Bad(
                f"releases / turns: {tail.counts[0]} / {tail.counts[1]} rows, the chain committed "
                f"{verified.counts[0]} / {verified.counts[1]}"
            )
    except _Bad as bad:
        raise LedgerStoreError(f"verification on open failed: {bad}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise LedgerStoreError("verification on open failed: unreadable row (corrupted values)") from None
    if verified.seq == 0:
        raise LedgerStoreError("verification on open failed: no chain")
    return verified


def verify_on_open(
    key: ChainKey,
    identity: str,
    stored: object,
    holds: Callable[[int, str], bool],
    read_tail: TailReader,
    rest: tuple[tuple[Row, ...], tuple[Row, ...], tuple[int, int]],
) -> tuple[Verified, bool]:
    """Verification on open from a backend's reads in one snapshot: `stored` the checkpoint
    row's text (or None), `holds(seq, mac)` whether the chain holds that event, `read_tail`
    the events and rows after a checkpoint, `rest` every meta and ledger row and the release
    and turn row counts. A checkpoint that is missing, forged, another database's or off this
    chain is ignored (the walk starts at the genesis). Returns what is verified and whether
    the stored checkpoint already covers it."""
    start = parse_checkpoint(key, identity, stored)
    if start is not None and not holds(start.seq, start.mac):
        start = None
    chain, releases, turns = read_tail(*checkpoint_after(start))
    meta, ledgers, counts = rest
    verified = verify_tail(key, start, Tail(chain, meta, ledgers, releases, turns, counts))
    return verified, start is not None and verified.seq == start.seq


def checkpoint_after(start: Checkpoint | None) -> tuple[int, int, int]:
    """(chain seq, newest release seq, newest turn seq) a checkpoint covers (zeros: none)."""
    if start is None:
        return 0, 0, 0
    newest = start.data["newest"]
    return start.seq, int(newest[0]), int(newest[1])


TailRows = tuple[tuple[Row, ...], tuple[Row, ...], tuple[Row, ...]]  # chain events, release rows, turn rows
TailReader = Callable[[int, int, int], TailRows]
Served = tuple[SessionKey, Mapping[str, Fraction], Mapping[str, Fraction] | None, ScopeRows | None]


class LiveVerification:
    """A durable store's verified state after its open, moved forward with the chain before
    any row is served or any charge admitted (the store calls `check` under its lock, inside
    the snapshot or write transaction whose rows it checks). A failed fold is final: the
    store refuses every later load and charge (fail closed) until it is reopened."""

    def __init__(self, key: ChainKey, where: str, verified: Verified) -> None:
        self._key = key
        self._where = where
        self._verified = verified
        self._failed: str | None = None

    def check(self, read_tail: TailReader, scopes: Sequence[Served], meta: Mapping[str, str | None] | None = None) -> None:
        """Fold the events committed since the last check (`read_tail(seq, newest release,
        newest turn)`: the chain events and the release and turn rows after those), then
        compare each scope's ledgers, caps and served row digests, and each `meta` row read
        (None: absent), with the chain's."""
        if self._failed is not None:
            raise LedgerStoreError(self._failed)
        verified = self._verified
        try:
            try:
                verified.advance(self._key, *read_tail(verified.seq, verified.newest[0], verified.newest[1]))
            except (_Bad, ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
                self._failed = self._refusal(error)
                raise LedgerStoreError(self._failed) from None
            for key, ledgers, caps, served in scopes:
                verified.check_scope(key, ledgers, caps, served)
            for name, value in (meta or {}).items():
                if verified.state.meta.get(name) != value:
                    raise _Bad(f"meta row {name}: differs from the chain (edited, inserted or deleted)")
        except _Bad as bad:
            raise LedgerStoreError(self._refusal(bad)) from None

    def _refusal(self, error: Exception) -> str:
        problem = str(error) if isinstance(error, _Bad) else "unreadable row (corrupted values)"
        return (
            f"ledger database {self._where}: refused, a row to be served or charged differs from its verified chain: "
            f"{problem}; nothing was served or charged (dpmem ledger verify {self._where} names the row; "
            "put the newest verified backup back with dpmem ledger restore)"
        )
