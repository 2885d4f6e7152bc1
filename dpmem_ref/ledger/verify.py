"""`dpmem ledger verify`: re-derive every ledger table from the chain, for any backend.

The backend hands over its rows as plain tuples (`LedgerRows`); `replay` (bounded work;
unreadable bytes are a problem line, never an exception) then
1. walks the chain: seq 1, 2, 3, ... without gaps, each MAC recomputed from its
   predecessor (an edited, deleted, inserted, reordered or spliced event is named);
2. re-derives from the events alone the fingerprint, meta, caps, every release and turn
   row, every ledger L_a as the running sum of the committed charges (every scope), checking
   C5 (L_a <= B_a) after each charge, C3 (eps > 0) on a charged release, none on a fallback;
3. compares every table row with the derived one, naming the first edited/inserted/deleted;
4. checks the anchor's event (seq AND MAC) is in the chain; lists rollbacks, re-anchors.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.ledger.chain import GENESIS_MAC, MAX_BODY_BYTES, ChainKey, HighWater, record_digest, rows_identity
from dpmem_ref.ledger.codecs import fraction_from_text
from dpmem_ref.ledger.contract import SCHEMA_VERSION, LedgerStoreError

Row = Sequence[Any]


@attrs.frozen
class LedgerRows:
    """Every row of a ledger database (as the backend's driver returned them)."""

    meta: tuple[Row, ...]  # (key, value)
    chain: tuple[Row, ...]  # (seq, kind, body, mac) in seq order
    ledgers: tuple[Row, ...]  # (user, interaction, attribute, spent, cap)
    releases: tuple[Row, ...]  # (user, interaction, seq, release_id, turn_id, index, slot, view, admitted, set, eps)
    turns: tuple[Row, ...]  # (user, interaction, seq, turn_id, record)


@attrs.frozen
class Replay:
    """What the chain proves (or the first problem found)."""

    fingerprint: str | None
    key_id: str | None
    events: int
    sessions: int
    releases: int
    turns: int
    rollbacks: tuple[str, ...]
    migrated: bool
    problem: str | None
    identity: str | None = None  # the database identity its genesis fixes


class _Bad(Exception):
    """The first problem (one line); stops the replay."""


def _text(value: object, where: str) -> str:
    if isinstance(value, bytes):
        raise _Bad(f"{where}: bytes where text is expected (corrupted row)")
    if not isinstance(value, str) or not value.isprintable():
        raise _Bad(f"{where}: unreadable text")
    return value


def _seq(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 1 << 62:
        raise _Bad(f"{where}: not a positive integer seq")
    return value


def _fraction(value: object, where: str) -> Fraction:
    try:
        return fraction_from_text(value, where)
    except LedgerStoreError as error:
        raise _Bad(str(error)) from None


def _stored_fraction(value: object, where: str) -> Fraction:
    """A table's fraction, in the one spelling the stores write ("4/6" for 2/3 is an edit)."""
    found = _fraction(value, where)
    if value != f"{found.numerator}/{found.denominator}":
        raise _Bad(f"{where}: differs from the chain (not the canonical 'p/q' text)")
    return found


def _body(row: Row, where: str) -> dict[str, Any]:
    body = _text(row[2], where)
    if len(body) > MAX_BODY_BYTES:
        raise _Bad(f"{where}: event body too long")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise _Bad(f"{where}: unreadable event body") from None
    if not isinstance(data, dict):
        raise _Bad(f"{where}: unreadable event body")
    return data


def _walk(chain: tuple[Row, ...], key: ChainKey, first: int = 1, previous: str = GENESIS_MAC) -> None:
    """Every event's MAC from its predecessor's, seq `first`, `first` + 1, ... without gaps."""
    for position, row in enumerate(chain, start=first):
        if len(row) != 4:
            raise _Bad(f"chain row {position}: wrong shape")
        seq = _seq(row[0], f"chain row {position}")
        if seq != position:
            raise _Bad(f"chain seq {seq}: expected seq {position} (a chain row was deleted or inserted)")
        kind, body, mac = (_text(row[i], f"chain seq {seq}") for i in (1, 2, 3))
        if not hmac.compare_digest(key.mac(seq, kind, previous, body), mac):
            raise _Bad(
                f"chain seq {seq}: MAC does not match (this row or its predecessor was edited, reordered or forged)"
            )
        previous = mac


@attrs.define
class _State:
    fingerprint: str | None = None
    key_id: str | None = None
    migrated: bool = False
    caps: dict[tuple[str, str], dict[str, Fraction]] = attrs.field(factory=dict)
    spent: dict[tuple[str, str], dict[str, Fraction]] = attrs.field(factory=dict)
    releases: dict[int, tuple[Any, ...]] = attrs.field(factory=dict)
    turns: dict[int, tuple[Any, ...]] = attrs.field(factory=dict)
    rollbacks: list[str] = attrs.field(factory=list)
    meta: dict[str, str] = attrs.field(factory=dict)  # extra meta rows (rebind events)


def _session(state: _State, data: dict[str, Any], where: str) -> tuple[str, str]:
    key = (_text(data.get("user"), where), _text(data.get("interaction"), where))
    if key not in state.caps:
        raise _Bad(f"{where}: a session that was never opened")
    return key


def _charge(state: _State, data: dict[str, Any], where: str) -> None:
    session = _session(state, data, where)
    release = data.get("release")
    if not isinstance(release, dict):
        raise _Bad(f"{where}: no release")
    seq = _seq(release.get("seq"), where)
    charge_set = release.get("charge_set")
    if not isinstance(charge_set, list) or not all(isinstance(a, str) for a in charge_set):
        raise _Bad(f"{where}: unreadable charge set")
    epsilon = _fraction(release.get("epsilon"), where)
    admitted = release.get("admitted")
    if not isinstance(admitted, bool):
        raise _Bad(f"{where}: unreadable admission")
    if not admitted and (charge_set or epsilon):
        raise _Bad(f"{where}: a fallback with a charge")
    if admitted and charge_set and epsilon <= 0:
        raise _Bad(f"{where}: a charged release with eps 0 (C3)")
    debited = [(session, data.get("ledgers"))]
    for scope in data.get("scopes", []):  # a multi-scope charge: the same eps to every scope
        if not isinstance(scope, dict):
            raise _Bad(f"{where}: unreadable scope")
        debited.append((_session(state, scope, where), scope.get("ledgers")))
    if len({key for key, _ in debited}) != len(debited):
        raise _Bad(f"{where}: a scope debited twice")
    for scope_key, stored in debited:
        caps, spent = state.caps[scope_key], state.spent[scope_key]
        for attribute in charge_set:
            if attribute not in caps:
                raise _Bad(f"{where}: charged to an attribute without a ledger")
            spent[attribute] += epsilon
            if spent[attribute] > caps[attribute]:
                raise _Bad(f"{where}: C5: the committed charges exceed the cap of {attribute}")
        if not isinstance(stored, dict) or {a: _fraction(v, where) for a, v in stored.items()} != spent:
            raise _Bad(f"{where}: its ledgers differ from the sum of the committed charges")
    if seq in state.releases:
        raise _Bad(f"{where}: release seq {seq} committed twice")
    state.releases[seq] = (
        *session, seq, release.get("release_id"), release.get("turn_id"), release.get("index"),
        release.get("slot"), release.get("view"), admitted, sorted(charge_set), epsilon,
    )  # fmt: skip


def _rebind(state: _State, data: dict[str, Any], where: str) -> None:
    """An interface change carrying the ledgers over: spent unchanged, new attributes at 0."""
    if data.get("expected") != state.fingerprint:
        raise _Bad(f"{where}: rebinds from another fingerprint than the bound one")
    state.fingerprint = _text(data.get("fingerprint"), where)
    meta = data.get("meta")
    sessions = data.get("sessions")
    if not isinstance(meta, dict) or not isinstance(sessions, list):
        raise _Bad(f"{where}: unreadable rebind")
    state.meta.update({_text(k, where): _text(v, where) for k, v in meta.items()})
    for entry in sessions:
        if not isinstance(entry, dict) or not isinstance(entry.get("caps"), dict):
            raise _Bad(f"{where}: unreadable session")
        session = _session(state, entry, where)
        caps = {_text(a, where): _fraction(c, where) for a, c in entry["caps"].items()}
        spent = {a: state.spent[session].get(a, Fraction(0)) for a in caps}
        if set(state.spent[session]) - set(caps) or any(spent[a] > caps[a] for a in caps):
            raise _Bad(f"{where}: C5: new caps below the spent ledgers (or an attribute dropped)")
        stored = entry.get("ledgers")
        if not isinstance(stored, dict) or {a: _fraction(v, where) for a, v in stored.items()} != spent:
            raise _Bad(f"{where}: its ledgers differ from the sum of the committed charges")
        state.caps[session], state.spent[session] = caps, spent


def _derive(chain: tuple[Row, ...], start: _State | None = None) -> _State:
    state = _State() if start is None else start
    for row in chain:
        seq, kind = row[0], row[1]
        where = f"chain seq {seq} ({kind})"
        data = _body(row, where)
        if seq == 1:
            if kind != "genesis" or data.get("schema") != SCHEMA_VERSION:
                raise _Bad(f"{where}: the chain does not start with a genesis event of schema {SCHEMA_VERSION}")
            state.key_id = str(data.get("key_id"))
        elif kind in ("bind", "migrate"):
            if state.fingerprint is not None:
                raise _Bad(f"{where}: a second interface binding")
            state.fingerprint = _text(data.get("fingerprint"), where)
            state.migrated = kind == "migrate"
        elif kind == "open":
            session = (_text(data.get("user"), where), _text(data.get("interaction"), where))
            caps = data.get("caps")
            if session in state.caps or not isinstance(caps, dict) or not caps:
                raise _Bad(f"{where}: a session opened twice or without caps")
            state.caps[session] = {_text(a, where): _fraction(c, where) for a, c in caps.items()}
            state.spent[session] = dict.fromkeys(state.caps[session], Fraction(0))
        elif kind == "charge":
            _charge(state, data, where)
        elif kind == "turn":
            session = _session(state, data, where)
            turn_seq = _seq(data.get("seq"), where)
            if turn_seq in state.turns:
                raise _Bad(f"{where}: turn seq {turn_seq} committed twice")
            state.turns[turn_seq] = (*session, turn_seq, data.get("turn_id"), data.get("record_sha256"))
        elif kind == "rebind":
            _rebind(state, data, where)
        elif kind in ("rollback", "reanchor"):  # explicit, recorded recoveries: reported by every verify
            state.rollbacks.append(
                f"seq {seq}: restored back to chain seq {data.get('to_seq')} from seq {data.get('from_seq')}"
                if kind == "rollback"
                else f"seq {seq}: re-anchored at chain seq {data.get('to_seq')} (the anchor was {data.get('previous')})"
            )
        else:
            raise _Bad(f"{where}: unknown event kind")
    return state


def _compare(rows: LedgerRows, state: _State) -> None:
    _compare_meta(rows.meta, state)
    _compare_rows("releases", rows.releases, state.releases, _release_row)  # commit order: releases,
    _compare_rows("turns", rows.turns, state.turns, _turn_row)  # turns, then the ledgers they sum to
    _compare_ledgers(rows.ledgers, state)


def _compare_meta(rows: tuple[Row, ...], state: _State) -> None:
    meta = {str(k): v for k, v, *_ in rows}
    if meta.pop("schema", None) != SCHEMA_VERSION:
        raise _Bad(f"meta.schema is not version {SCHEMA_VERSION}")
    if meta.pop("fingerprint", None) != state.fingerprint:
        raise _Bad("meta.fingerprint differs from the fingerprint the chain bound")
    for name in sorted(set(meta) | set(state.meta)):
        if meta.get(name) != state.meta.get(name):
            raise _Bad(f"meta row {name}: differs from the chain (edited, inserted or deleted)")


def _compare_ledgers(rows: tuple[Row, ...], state: _State) -> None:
    derived = {(*s, a): (state.spent[s][a], state.caps[s][a]) for s in state.caps for a in state.caps[s]}
    seen: set[tuple[str, ...]] = set()
    for row in rows:
        user, interaction, attribute = (_text(v, "ledgers row") for v in row[:3])
        where = f"ledgers row ({user}, {interaction}, {attribute})"
        found = (_stored_fraction(row[3], where), _stored_fraction(row[4], where))
        if derived.get((user, interaction, attribute)) != found:
            raise _Bad(f"{where}: differs from the chain (L_a = sum of committed charges, B_a as opened)")
        seen.add((user, interaction, attribute))
    missing = sorted(set(derived) - seen)
    if missing:
        raise _Bad(f"ledgers row {missing[0]}: deleted (the chain opened it)")


def _release_row(row: Row, where: str) -> tuple[Any, ...]:
    user, interaction, seq, release_id, turn_id, index, slot, view, admitted, charge_set, epsilon = row
    try:
        charges = json.loads(_text(charge_set, where))
    except (ValueError, RecursionError):
        raise _Bad(f"{where}: unreadable charge set") from None
    if admitted not in (0, 1) or not isinstance(charges, list) or charge_set != json.dumps(sorted(map(str, charges))):
        raise _Bad(f"{where}: unreadable row (or not the canonical charge set text)")
    fields = (_text(v, where) for v in (user, interaction))
    rest = (_text(v, where) for v in (release_id, turn_id))
    return (*fields, seq, *rest, index, _text(slot, where), _text(view, where), bool(admitted), sorted(map(str, charges)),
            _stored_fraction(epsilon, where))  # fmt: skip


def _turn_row(row: Row, where: str) -> tuple[Any, ...]:
    user, interaction, seq, turn_id, record = row
    return (
        _text(user, where),
        _text(interaction, where),
        seq,
        _text(turn_id, where),
        record_digest(_text(record, where)),
    )


def _compare_rows(table: str, found: tuple[Row, ...], derived: dict[int, tuple[Any, ...]], read: Any) -> None:
    seen: set[int] = set()
    for row in found:
        seq = _seq(row[2], f"{table} row")
        where = f"{table} seq {seq}"
        if seq not in derived:
            raise _Bad(f"{where}: not in the chain (inserted)")
        if read(row, where) != derived[seq]:
            raise _Bad(f"{where}: differs from its chain event (edited)")
        seen.add(seq)
    missing = sorted(set(derived) - seen)
    if missing:
        raise _Bad(f"{table} seq {missing[0]}: deleted (its chain event remains)")


def replay(rows: LedgerRows, key: ChainKey, mark: HighWater | None) -> Replay:
    """Verify `rows` against the chain and `mark` (see the module docstring)."""
    state = _State()
    try:
        if not rows.chain:
            raise _Bad(
                "no chain events (emptied: tampered); put the newest verified backup back with dpmem ledger restore"
            )
        stored = _body(rows.chain[0], "chain seq 1").get("key_id") if len(rows.chain[0]) == 4 else None
        if stored != key.key_id:  # the likely operator error, named before the MAC walk fails on it
            raise _Bad(
                f"chained with key id {str(stored)[:16]}, but the configured key (DPMEM_LEDGER_KEY / "
                f"DPMEM_LEDGER_KEY_FILE) has key id {key.key_id}"
            )
        _walk(rows.chain, key)
        state = _derive(rows.chain)
        _compare(rows, state)
        head = rows.chain[-1]
        if mark is not None and (not 0 < mark.seq <= int(head[0]) or str(rows.chain[mark.seq - 1][3]) != mark.mac):
            raise _Bad(
                f"the chain (head seq {head[0]}) does not reach its high-water mark seq {mark.seq}: rolled back "
                "or truncated without a recorded rollback"
            )
        problem = None
    except _Bad as bad:
        problem = str(bad)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        problem = "unreadable row (corrupted values)"
    return Replay(
        fingerprint=state.fingerprint,
        key_id=state.key_id,
        events=len(rows.chain),
        sessions=len(state.caps),
        releases=len(state.releases),
        turns=len(state.turns),
        rollbacks=tuple(state.rollbacks),
        migrated=state.migrated,
        problem=problem,
        identity=rows_identity(rows.chain),
    )
