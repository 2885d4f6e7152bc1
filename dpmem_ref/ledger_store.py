"""Durable privacy ledgers: one transaction per charged selection (C5 across processes).

Theorem 1 assumes that the ledger L_a is exact and never forgets. A deployment that serves
one user from several processes, or restarts, keeps that promise only if the prospective
check and the charge are one atomic step against shared state, and if the view is released
only after that step has committed (charge-before-release: a crash can over-charge, never
under-charge). This module is that step.

A `LedgerStore` holds, per (user, interaction):
- the exact ledgers L_a and caps B_a, stored as "p/q" text (never floats);
- every slot-level release (view, admitted, charge set, eps), in commit order;
- the completed turn records: the released history tau_<t that routing reads (C4).

`LedgerSession.charge_and_record` is the one transaction of Algorithm 1, lines 9-15: it
re-reads the ledgers, admits the selection iff L_a + eps <= B_a for every a in the charge
set, charges all of them or none, and persists the release row with it. The caller has
sampled the candidate view *privately* (nothing is observable yet) and may release the
returned view only after this call returns.

Backends: `MemoryLedgerStore` (default; one process) and `SQLiteLedgerStore` (stdlib
sqlite3, WAL journal, synchronous=FULL, BEGIN IMMEDIATE for the check and charge). Both
run one contract suite (tests/test_ledger_contract.py). See docs/durability.md.

Nothing here ever sees memory contents or scores: the store receives public facts only
(slot and view names, charge sets, eps, admission, public turn records).
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs

from dpmem_ref.errors import ContractViolation, InputError
from dpmem_ref.exact import require_positive_rational
from dpmem_ref.interface import TurnRecord

MAX_KEY_LENGTH = 256
MAX_NAME_LENGTH = 256
MAX_RECORD_BYTES = 1 << 20
SCHEMA_VERSION = "1"
_KEY_TEXT = re.compile(r"^[\x20-\x7e]+$")  # printable ASCII: ids end up in logs and file names
_RELEASE_ID = re.compile(r"^[0-9a-f]{1,64}$")
_FRACTION_TEXT = re.compile(r"^(0|[1-9][0-9]*)/([1-9][0-9]*)$")

FaultHook = Callable[[str], None]
_T = TypeVar("_T")
_JITTER = random.SystemRandom()  # backoff jitter only; fresh after fork


class LedgerStoreError(RuntimeError):
    """The persisted ledger state is unreadable or inconsistent (names the table and check)."""


def fraction_to_text(value: Fraction) -> str:
    """Exact ledger text "p/q" (denominator always written)."""
    return f"{value.numerator}/{value.denominator}"


def fraction_from_text(text: object, where: str) -> Fraction:
    if not isinstance(text, str):
        raise LedgerStoreError(f"{where}: expected exact 'p/q' text, found {type(text).__name__}")
    match = _FRACTION_TEXT.fullmatch(text)
    if match is None:
        raise LedgerStoreError(f"{where}: expected exact non-negative 'p/q' text")
    return Fraction(int(match.group(1)), int(match.group(2)))


def _check_key_part(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_KEY_LENGTH or not _KEY_TEXT.fullmatch(value):
        raise InputError(field, f"a printable ASCII id of 1..{MAX_KEY_LENGTH} characters", value)
    return value


def _check_name(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_LENGTH:
        raise InputError(field, f"a name of 1..{MAX_NAME_LENGTH} characters", value)
    return value


def _check_turn_id(turn_id: object) -> str:
    if not isinstance(turn_id, str) or not _RELEASE_ID.fullmatch(turn_id):
        raise InputError("turn_id", "1..64 lowercase hex digits", turn_id)
    return turn_id


@attrs.frozen
class SessionKey:
    """(user, interaction): one ledger vector and one released history."""

    user: str = attrs.field(validator=lambda _, __, v: _check_key_part(v, "user"))
    interaction: str = attrs.field(validator=lambda _, __, v: _check_key_part(v, "interaction"))


@attrs.frozen
class ReleaseRequest:
    """One slot-level release, prepared before the charge transaction.

    `view` is the candidate drawn privately from the plan's distribution (not yet
    observable); `fallback_view` is the slot's generic view, recorded instead when the
    transaction refuses the charge. `requested` says whether the plan (computed from the
    ledgers the caller read) admitted the selection; the transaction re-checks it against
    the committed ledgers.
    """

    release_id: str
    turn_id: str
    index: int
    slot: str
    view: str
    fallback_view: str
    charge_set: frozenset[str]
    epsilon: Fraction
    requested: bool = True

    def __attrs_post_init__(self) -> None:
        for field in ("release_id", "turn_id"):
            value = getattr(self, field)
            if not isinstance(value, str) or not _RELEASE_ID.fullmatch(value):
                raise InputError(field, "1..64 lowercase hex digits", value)
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 0:
            raise InputError("index", "a non-negative integer", self.index)
        _check_name(self.slot, "slot")
        _check_name(self.view, "view")
        _check_name(self.fallback_view, "fallback_view")
        if not isinstance(self.charge_set, frozenset) or not all(isinstance(a, str) for a in self.charge_set):
            raise InputError("charge_set", "a frozenset of attribute names", type(self.charge_set).__name__)
        require_positive_rational(self.epsilon, "epsilon")
        if not isinstance(self.requested, bool):
            raise InputError("requested", "true or false", self.requested)


@attrs.frozen
class SlotRelease:
    """A committed release row: what was (or may now be) released, and what it cost."""

    seq: int
    release_id: str
    turn_id: str
    index: int
    slot: str
    view: str
    admitted: bool
    charge_set: frozenset[str]
    epsilon: Fraction  # the amount charged to each attribute of charge_set (0 if not admitted)


@attrs.frozen
class ReleaseOutcome:
    """The committed result of `charge_and_record`: release `view` now, not before."""

    release: SlotRelease
    ledgers: tuple[tuple[str, Fraction], ...]

    @property
    def view(self) -> str:
        return self.release.view

    @property
    def admitted(self) -> bool:
        return self.release.admitted

    def ledger_map(self) -> dict[str, Fraction]:
        return dict(self.ledgers)


@attrs.frozen
class SessionSnapshot:
    """Ledgers, caps, committed releases and the completed-turn history of one session."""

    ledgers: tuple[tuple[str, Fraction], ...]
    caps: tuple[tuple[str, Fraction], ...]
    history: tuple[TurnRecord, ...]
    releases: tuple[SlotRelease, ...]

    def ledger_map(self) -> dict[str, Fraction]:
        return dict(self.ledgers)


class LedgerSession(Protocol):
    """The persisted state of one (user, interaction)."""

    @property
    def key(self) -> SessionKey: ...

    def load(self) -> SessionSnapshot:
        """The committed ledgers, releases and completed turns."""

    def charge_and_record(self, request: ReleaseRequest) -> ReleaseOutcome:
        """ONE transaction: prospective check and charge of every attribute of the charge
        set (all or none), plus the release row. Release the outcome's view only after
        this returns."""

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        """Append a completed turn to the released history (what routing reads, C4)."""


class LedgerStore(Protocol):
    def open_session(self, user: str, interaction: str, caps: Mapping[str, Fraction]) -> LedgerSession:
        """Open (creating at zero ledgers) the session; caps must match any stored ones."""

    def close(self) -> None: ...


def _check_caps(caps: Mapping[str, Fraction]) -> dict[str, Fraction]:
    if not isinstance(caps, Mapping) or not caps:
        raise InputError("caps", "a non-empty mapping attribute -> cap", type(caps).__name__)
    return {_check_name(a, "caps"): require_positive_rational(c, f"caps.{a}") for a, c in caps.items()}


def _admit(ledgers: dict[str, Fraction], caps: Mapping[str, Fraction], request: ReleaseRequest) -> bool:
    """Algorithm 1, line 9, on the committed ledgers: L_a + eps <= B_a for every a."""
    unknown = sorted(request.charge_set - set(caps))
    if unknown:
        raise InputError("charge_set", f"attributes among {sorted(caps)}", unknown)
    if not request.requested:
        return False
    return all(ledgers[a] + request.epsilon <= caps[a] for a in request.charge_set)


def _charged(
    ledgers: dict[str, Fraction], caps: Mapping[str, Fraction], request: ReleaseRequest
) -> dict[str, Fraction]:
    after = {a: (v + request.epsilon if a in request.charge_set else v) for a, v in ledgers.items()}
    for attribute, value in after.items():
        if value > caps[attribute]:  # C5 invariant; unreachable after _admit
            raise ContractViolation("C5", f"attribute {attribute}: ledger would exceed its cap")
    return after


# ----------------------------------------------------------------------------- records


def _encode_public(value: object, field: str) -> Any:
    """JSON for public values (controls): tagged tuples, frozensets and fractions."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Fraction):
        return {"q": fraction_to_text(value)} if value >= 0 else {"q-": fraction_to_text(-value)}
    if isinstance(value, tuple):
        return {"t": [_encode_public(v, field) for v in value]}
    if isinstance(value, frozenset):
        return {"s": sorted((_encode_public(v, field) for v in value), key=json.dumps)}
    raise InputError(
        field, "a public value built from None, bool, int, str, Fraction, tuple, frozenset", type(value).__name__
    )


def _decode_public(value: Any, field: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "q":
            return fraction_from_text(inner, field)
        if tag == "q-":
            return -fraction_from_text(inner, field)
        if tag == "t" and isinstance(inner, list):
            return tuple(_decode_public(v, field) for v in inner)
        if tag == "s" and isinstance(inner, list):
            return frozenset(_decode_public(v, field) for v in inner)
    raise LedgerStoreError(f"{field}: unreadable public value")


def encode_turn(record: TurnRecord) -> str:
    data = {
        "query": record.query,
        "views": [[slot, view] for slot, view in record.views],
        "control": _encode_public(record.control, "control"),
        "response": record.response,
        "admitted": list(record.admitted),
        "charges": [[slot, sorted(charge), fraction_to_text(eps)] for slot, charge, eps in record.charges],
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    if len(text) > MAX_RECORD_BYTES:
        raise InputError("turn record", f"at most {MAX_RECORD_BYTES} bytes", len(text))
    return text


def decode_turn(text: str) -> TurnRecord:
    try:
        data = json.loads(text)
        control: Hashable = _decode_public(data["control"], "turns.control")
        return TurnRecord(
            query=str(data["query"]),
            views=tuple((str(s), str(v)) for s, v in data["views"]),
            control=control,
            response=str(data["response"]),
            admitted=tuple(bool(a) for a in data["admitted"]),
            charges=tuple(
                (str(s), frozenset(str(a) for a in c), fraction_from_text(e, "turns.charges"))
                for s, c, e in data["charges"]
            ),
        )
    except LedgerStoreError:
        raise
    except (ValueError, KeyError, TypeError) as error:
        raise LedgerStoreError(f"turns.record: unreadable turn record ({type(error).__name__})") from None


# ----------------------------------------------------------------------------- memory backend


@attrs.define
class _MemoryData:
    caps: dict[str, Fraction]
    ledgers: dict[str, Fraction]
    releases: list[SlotRelease] = attrs.field(factory=list)
    turns: list[tuple[str, TurnRecord]] = attrs.field(factory=list)
    release_ids: set[str] = attrs.field(factory=set)
    turn_ids: set[str] = attrs.field(factory=set)


@attrs.define(repr=False)
class MemoryLedgerStore:
    """In-process ledgers (the default). Atomic under one lock; forgotten on exit."""

    _data: dict[SessionKey, _MemoryData] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _seq: list[int] = attrs.field(factory=lambda: [0], init=False)

    def __repr__(self) -> str:
        return f"MemoryLedgerStore(sessions={len(self._data)})"

    def open_session(self, user: str, interaction: str, caps: Mapping[str, Fraction]) -> MemoryLedgerSession:
        key = SessionKey(user=user, interaction=interaction)
        checked = _check_caps(caps)
        with self._lock:
            data = self._data.get(key)
            if data is None:
                self._data[key] = _MemoryData(caps=checked, ledgers={a: Fraction(0) for a in checked})
            elif data.caps != checked:
                raise InputError("caps", "the caps this interaction was opened with (precommitted)", "different caps")
        return MemoryLedgerSession(store=self, key=key)

    def close(self) -> None:
        pass


@attrs.frozen
class MemoryLedgerSession:
    store: MemoryLedgerStore = attrs.field(repr=False)
    key: SessionKey

    def _data(self) -> _MemoryData:
        return self.store._data[self.key]  # noqa: SLF001

    def load(self) -> SessionSnapshot:
        with self.store._lock:  # noqa: SLF001
            data = self._data()
            return SessionSnapshot(
                ledgers=tuple(sorted(data.ledgers.items())),
                caps=tuple(sorted(data.caps.items())),
                history=tuple(record for _, record in data.turns),
                releases=tuple(data.releases),
            )

    def charge_and_record(self, request: ReleaseRequest) -> ReleaseOutcome:
        with self.store._lock:  # noqa: SLF001
            data = self._data()
            if request.release_id in data.release_ids:
                raise InputError("release_id", "an id not used before", request.release_id)
            admitted = _admit(data.ledgers, data.caps, request)
            ledgers = _charged(data.ledgers, data.caps, request) if admitted else dict(data.ledgers)
            self.store._seq[0] += 1  # noqa: SLF001
            release = _release_row(self.store._seq[0], request, admitted)  # noqa: SLF001
            data.ledgers = ledgers
            data.releases.append(release)
            data.release_ids.add(release.release_id)
            return ReleaseOutcome(release=release, ledgers=tuple(sorted(ledgers.items())))

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        _check_turn_id(turn_id)
        decoded = decode_turn(encode_turn(record))  # same validation and round trip as SQLite
        with self.store._lock:  # noqa: SLF001
            data = self._data()
            if turn_id in data.turn_ids:
                raise InputError("turn_id", "an id not used before", turn_id)
            data.turns.append((turn_id, decoded))
            data.turn_ids.add(turn_id)


def _release_row(seq: int, request: ReleaseRequest, admitted: bool) -> SlotRelease:
    return SlotRelease(
        seq=seq,
        release_id=request.release_id,
        turn_id=request.turn_id,
        index=request.index,
        slot=request.slot,
        view=request.view if admitted else request.fallback_view,
        admitted=admitted,
        charge_set=request.charge_set if admitted else frozenset(),
        epsilon=request.epsilon if admitted and request.charge_set else Fraction(0),
    )


# ----------------------------------------------------------------------------- SQLite backend

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledgers (
    user TEXT NOT NULL, interaction TEXT NOT NULL, attribute TEXT NOT NULL,
    spent TEXT NOT NULL, cap TEXT NOT NULL,
    PRIMARY KEY (user, interaction, attribute));
CREATE TABLE IF NOT EXISTS releases (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL, interaction TEXT NOT NULL,
    release_id TEXT NOT NULL UNIQUE, turn_id TEXT NOT NULL, slot_index INTEGER NOT NULL,
    slot TEXT NOT NULL, view TEXT NOT NULL, admitted INTEGER NOT NULL CHECK (admitted IN (0, 1)),
    charge_set TEXT NOT NULL, epsilon TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS releases_by_session ON releases (user, interaction, seq);
CREATE TABLE IF NOT EXISTS turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL, interaction TEXT NOT NULL, turn_id TEXT NOT NULL UNIQUE, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_by_session ON turns (user, interaction, seq);
"""


class SQLiteLedgerStore:
    """Ledgers in one SQLite file shared by every process of a deployment.

    WAL journal, synchronous=FULL (a commit survives power loss once it returns), and
    BEGIN IMMEDIATE for every write: the check and the charge of all attributes run under
    the database write lock, so concurrent processes serialise and never both pass the
    cap. `fault_hook` (tests only) is called with "charge:inside" after the charge is
    written and before COMMIT, and with "charge:committed" right after COMMIT.
    """

    def __init__(self, path: str | Path, busy_timeout_s: float = 60.0, fault_hook: FaultHook | None = None) -> None:
        if (
            isinstance(busy_timeout_s, bool)
            or not isinstance(busy_timeout_s, int | float)
            or not 0 < busy_timeout_s <= 3600
        ):
            raise InputError("busy_timeout_s", "a number of seconds in (0, 3600]", busy_timeout_s)
        self.path = Path(path)
        self._busy_timeout_s = float(busy_timeout_s)
        self._fault_hook = fault_hook
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._pid = -1
        with self._transaction() as connection:
            connection.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != SCHEMA_VERSION:
                raise LedgerStoreError(f"meta.schema: expected version {SCHEMA_VERSION}")

    def __repr__(self) -> str:
        return f"SQLiteLedgerStore(path={str(self.path)!r})"

    def _retrying(self, action: Callable[[], _T]) -> _T:
        """Run `action`, retrying SQLITE_BUSY with short jittered sleeps up to busy_timeout_s.

        SQLite's own busy handler sleeps in steps of up to 100 ms, which serialises
        contending processes badly; the connection therefore has busy_timeout 0 and the
        waiting happens here.
        """
        deadline = time.monotonic() + self._busy_timeout_s
        delay = 0.0005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as error:
                text = str(error).lower()
                if "locked" not in text and "busy" not in text:
                    raise
                if time.monotonic() >= deadline:
                    raise LedgerStoreError("ledger store: database busy for longer than busy_timeout_s") from None
            time.sleep(_JITTER.uniform(0, delay))
            delay = min(2 * delay, 0.01)

    def _connect(self) -> sqlite3.Connection:
        # A connection must not cross fork(): reopen in a child process.
        if self._connection is None or self._pid != os.getpid():
            try:
                connection = sqlite3.connect(str(self.path), timeout=0, isolation_level=None, check_same_thread=False)
                connection.execute("PRAGMA busy_timeout = 0")
                mode = self._retrying(lambda: connection.execute("PRAGMA journal_mode = WAL").fetchone())
                if mode is None or str(mode[0]).lower() != "wal":
                    raise LedgerStoreError("ledger store: could not enable the WAL journal")
                connection.execute("PRAGMA synchronous = FULL")
                self._retrying(lambda: connection.executescript(_SCHEMA))
            except sqlite3.DatabaseError as error:
                raise LedgerStoreError(f"ledger store: cannot open the SQLite file ({type(error).__name__})") from None
            self._connection = connection
            self._pid = os.getpid()
        return self._connection

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""
        with self._lock:
            connection = self._connect()
            self._retrying(lambda: connection.execute("BEGIN IMMEDIATE"))
            try:
                yield connection
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot (one read transaction)."""
        with self._lock:
            connection = self._connect()
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                if connection.in_transaction:
                    connection.execute("COMMIT")

    def _fault(self, point: str) -> None:
        if self._fault_hook is not None:
            self._fault_hook(point)

    def open_session(self, user: str, interaction: str, caps: Mapping[str, Fraction]) -> SQLiteLedgerSession:
        key = SessionKey(user=user, interaction=interaction)
        checked = _check_caps(caps)
        with self._transaction() as connection:
            rows = connection.execute(
                "SELECT attribute, cap FROM ledgers WHERE user = ? AND interaction = ?", (key.user, key.interaction)
            ).fetchall()
            if rows:
                stored = {a: fraction_from_text(c, "ledgers.cap") for a, c in rows}
                if stored != checked:
                    raise InputError(
                        "caps", "the caps this interaction was opened with (precommitted)", "different caps"
                    )
            else:
                connection.executemany(
                    "INSERT INTO ledgers (user, interaction, attribute, spent, cap) VALUES (?, ?, ?, '0/1', ?)",
                    [(key.user, key.interaction, a, fraction_to_text(c)) for a, c in sorted(checked.items())],
                )
        return SQLiteLedgerSession(store=self, key=key)

    def integrity_check(self) -> str:
        with self._lock:
            row = self._connect().execute("PRAGMA integrity_check").fetchone()
        return str(row[0]) if row else "no answer"

    def close(self) -> None:
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None


def _ledger_rows(connection: sqlite3.Connection, key: SessionKey) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    rows = connection.execute(
        "SELECT attribute, spent, cap FROM ledgers WHERE user = ? AND interaction = ?", (key.user, key.interaction)
    ).fetchall()
    if not rows:
        raise LedgerStoreError("ledgers: no ledger rows for this session (open_session first)")
    spent = {a: fraction_from_text(s, "ledgers.spent") for a, s, _ in rows}
    caps = {a: fraction_from_text(c, "ledgers.cap") for a, _, c in rows}
    for attribute in spent:
        if spent[attribute] > caps[attribute]:
            raise ContractViolation("C5", f"attribute {attribute}: stored ledger exceeds its cap")
    return spent, caps


def _decode_release(row: tuple[Any, ...]) -> SlotRelease:
    seq, release_id, turn_id, index, slot, view, admitted, charge_set, epsilon = row
    try:
        charges = json.loads(charge_set)
    except ValueError:
        raise LedgerStoreError("releases.charge_set: unreadable") from None
    if not isinstance(charges, list) or not all(isinstance(a, str) for a in charges):
        raise LedgerStoreError("releases.charge_set: expected a list of attribute names")
    return SlotRelease(
        seq=int(seq),
        release_id=str(release_id),
        turn_id=str(turn_id),
        index=int(index),
        slot=str(slot),
        view=str(view),
        admitted=bool(admitted),
        charge_set=frozenset(charges),
        epsilon=fraction_from_text(epsilon, "releases.epsilon"),
    )


@attrs.define
class _LoadCache:
    """Rows already decoded by this session object (append-only tables)."""

    release_seq: int = 0
    turn_seq: int = 0
    releases: list[SlotRelease] = attrs.field(factory=list)
    history: list[TurnRecord] = attrs.field(factory=list)


@attrs.frozen
class SQLiteLedgerSession:
    store: SQLiteLedgerStore = attrs.field(repr=False)
    key: SessionKey
    _cache: _LoadCache = attrs.field(factory=lambda: _LoadCache(), init=False, eq=False, repr=False)

    def load(self) -> SessionSnapshot:
        with self.store._lock:  # noqa: SLF001  # the cache below is shared by threads
            return self.store._retrying(self._load_once)  # noqa: SLF001

    def _load_once(self) -> SessionSnapshot:
        # Rows are append-only and numbered in commit order (writes are serialised), so
        # each load reads only the rows committed since the previous one.
        key = self.key
        cache = self._cache
        with self.store._read() as connection:  # noqa: SLF001
            spent, caps = _ledger_rows(connection, key)
            releases = connection.execute(
                "SELECT seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
                "FROM releases WHERE user = ? AND interaction = ? AND seq > ? ORDER BY seq",
                (key.user, key.interaction, cache.release_seq),
            ).fetchall()
            turns = connection.execute(
                "SELECT seq, record FROM turns WHERE user = ? AND interaction = ? AND seq > ? ORDER BY seq",
                (key.user, key.interaction, cache.turn_seq),
            ).fetchall()
        new_releases = [_decode_release(tuple(row)) for row in releases]
        new_turns = [decode_turn(str(text)) for _, text in turns]
        cache.releases.extend(new_releases)
        cache.history.extend(new_turns)
        if new_releases:
            cache.release_seq = new_releases[-1].seq
        if turns:
            cache.turn_seq = int(turns[-1][0])
        return SessionSnapshot(
            ledgers=tuple(sorted(spent.items())),
            caps=tuple(sorted(caps.items())),
            history=tuple(cache.history),
            releases=tuple(cache.releases),
        )

    def charge_and_record(self, request: ReleaseRequest) -> ReleaseOutcome:
        key = self.key
        store = self.store
        with store._transaction() as connection:  # noqa: SLF001  # BEGIN IMMEDIATE: holds the write lock
            spent, caps = _ledger_rows(connection, key)
            admitted = _admit(spent, caps, request)
            after = _charged(spent, caps, request) if admitted else spent
            if admitted:
                connection.executemany(
                    "UPDATE ledgers SET spent = ? WHERE user = ? AND interaction = ? AND attribute = ?",
                    [(fraction_to_text(after[a]), key.user, key.interaction, a) for a in sorted(request.charge_set)],
                )
            try:
                cursor = connection.execute(
                    "INSERT INTO releases (user, interaction, release_id, turn_id, slot_index, slot, view, admitted, "
                    "charge_set, epsilon) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key.user,
                        key.interaction,
                        request.release_id,
                        request.turn_id,
                        request.index,
                        request.slot,
                        request.view if admitted else request.fallback_view,
                        int(admitted),
                        json.dumps(sorted(request.charge_set) if admitted else []),
                        fraction_to_text(request.epsilon if admitted and request.charge_set else Fraction(0)),
                    ),
                )
            except sqlite3.IntegrityError:
                raise InputError("release_id", "an id not used before", request.release_id) from None
            seq = int(cursor.lastrowid or 0)
            store._fault("charge:inside")  # noqa: SLF001
        store._fault("charge:committed")  # noqa: SLF001
        return ReleaseOutcome(release=_release_row(seq, request, admitted), ledgers=tuple(sorted(after.items())))

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        _check_turn_id(turn_id)
        text = encode_turn(record)
        with self.store._transaction() as connection:  # noqa: SLF001
            try:
                connection.execute(
                    "INSERT INTO turns (user, interaction, turn_id, record) VALUES (?, ?, ?, ?)",
                    (self.key.user, self.key.interaction, turn_id, text),
                )
            except sqlite3.IntegrityError:
                raise InputError("turn_id", "an id not used before", turn_id) from None
