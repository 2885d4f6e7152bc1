"""ONE session template for every ledger backend: open-session and the commit are written here once.

As dp_accounting's `PrivacyAccountant.compose()` validates and records once and then calls
the subclass's `_compose`, the public methods below hold everything the backends share
(argument checks, the fingerprint binding, the C5 re-check and the invariant L_a <= B_a,
id reuse, chain events, the fault points) and call small primitives that each backend
(`memory`, `sqlite`, `postgres`) implements over its own state. A new backend is one file of
primitives plus one row in `urls.SCHEMES`, whose every row the contract suite runs.

Public method -> primitives, each public call ONE transaction (`_transaction`, which also
wraps driver errors into one `LedgerStoreError` line):

- `LedgerBackend.open_session`: `_lock_writes`, `_read_fingerprint`, `_has_history`,
  `_write_fingerprint`, `_open_rows`, `_append_chain` ("bind", "open"); then `_committed`,
  `_session`;
- `LedgerBackend.rebind`: `_lock_writes`, `_read_fingerprint`, `_has_history`,
  `_session_keys`, `_session_ledgers` of each session `caps_for` gives caps (every carried
  table computed before the first write), `_write_caps` per carried session,
  `_write_fingerprint`, `_write_meta`, `_append_chain` ("rebind"); then `_committed`;
- `TemplateSession.charge_and_record`: `_lock_writes`, `_release_id_taken`, `_read_ledgers`
  (locked), `_write_charge` per scope, `_insert_release`, `_append_chain` ("charge"),
  fault "charge:inside"; then `_committed`, fault "charge:committed". After a lost COMMIT
  answer, `resolve_charge` (`_find_release`, `_read_ledgers` unlocked) says what committed;
- `TemplateSession.record_turn`: `_lock_writes`, `_insert_turn`, `_append_chain` ("turn");
  then `_committed`. After a lost COMMIT answer, `_turn_committed`.

Which statements share a transaction is what crash safety rests on (charge-before-release:
the charge, its release row and its chain event commit together or not at all); the template
fixes that grouping for every backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.chain import HighWater, bind_body, charge_body, open_body, rebind_body, turn_body
from dpmem_ref.ledger.codecs import encode_turn
from dpmem_ref.ledger.contract import FaultHook, id_used_before, interface_mismatch, needs_migration
from dpmem_ref.ledger.facts import (
    ReleaseOutcome,
    ReleaseRequest,
    SessionKey,
    SlotRelease,
    check_caps,
    check_fingerprint,
    check_same_caps,
    check_turn_id,
)
from dpmem_ref.ledger.scopes import check_scope_keys, checked_rebind, committed_scopes, rebound_caps

if TYPE_CHECKING:
    from dpmem_ref.ledger.checkpoint import Served

Tx = TypeVar("Tx")  # a backend's transaction handle (a connection; None for the in-process store)
S = TypeVar("S", bound="TemplateSession[Any]")
_T = TypeVar("_T")
Ledgers = tuple[dict[str, Fraction], dict[str, Fraction]]  # (spent, caps) of one session
CapsFor = Callable[[SessionKey], Mapping[str, Fraction] | None]  # a rebind's new caps of a session (None: kept)
Carried = tuple[SessionKey, dict[str, Fraction], dict[str, Fraction]]  # a session's (spent, caps) after a rebind


def assert_within_caps(key: SessionKey, spent: Mapping[str, Fraction], caps: Mapping[str, Fraction]) -> None:
    """C5's invariant L_a <= B_a for every attribute of one scope, on the ledgers a charge
    writes (checked before they are written: the in-process store has no rollback)."""
    for attribute, value in spent.items():
        if value > caps[attribute]:
            raise ContractViolation(
                "C5", f"session {key.user}/{key.interaction}, attribute {attribute}: L_a > B_a after the charge"
            )


class LedgerBackend(ABC, Generic[Tx, S]):
    """The store half of the template: `open_session` and `rebind`, over the primitives below."""

    __slots__ = ()
    CHAINED: ClassVar[bool] = True  # appends a chain event per write (False: no `_append_chain`)
    _fault_hook: FaultHook | None = None

    def open_session(
        self, user: str, interaction: str, caps: Mapping[str, Fraction], fingerprint: str | None = None
    ) -> S:
        """Open (creating at zero ledgers) the session; caps must match any stored ones, and a
        `fingerprint` binds the database on first use (see `contract.LedgerStore`)."""
        key = SessionKey(user=user, interaction=interaction)
        checked = check_caps(caps)
        if fingerprint is not None:
            check_fingerprint(fingerprint)
        marks: list[HighWater] = []

        def work(tx: Tx) -> None:  # the binding and the session rows commit together
            marks.clear()
            self._lock_writes(tx)
            if fingerprint is not None:
                stored = self._read_fingerprint(tx)
                if stored is None:
                    if self._has_history(tx):  # charges of an unknown interface
                        raise needs_migration(self._where, "charges without an interface fingerprint")
                    self._write_fingerprint(tx, fingerprint)
                    if self.CHAINED:
                        marks.append(self._append_chain(tx, "bind", bind_body(fingerprint)))
                elif stored != fingerprint:
                    raise interface_mismatch(self._where, stored, fingerprint)
            stored_caps, created = self._open_rows(tx, key, checked)
            if stored_caps is not None:
                check_same_caps(stored_caps, checked)
            if created and self.CHAINED:
                marks.append(self._append_chain(tx, "open", open_body(key, checked)))

        self._transaction(work)
        self._committed(marks[-1] if marks else None)
        return self._session(key)

    def rebind(
        self, expected: str | None, fingerprint: str, meta: Mapping[str, str], caps_for: CapsFor | None = None
    ) -> None:
        """ONE transaction (see `contract.LedgerStore.rebind`): bind the database to `fingerprint`
        if it is bound to `expected`, write the `meta` rows, and carry every session `caps_for`
        gives caps over to them (`rebound_caps`). Every check runs before the first write, so a
        refused rebind writes nothing even where there is no rollback (the in-process store)."""
        rows = checked_rebind(fingerprint, meta)
        marks: list[HighWater] = []

        def work(tx: Tx) -> None:  # binding, meta rows and carried caps commit together
            marks.clear()
            self._lock_writes(tx)
            stored = self._read_fingerprint(tx)
            if stored != expected:
                raise interface_mismatch(self._where, stored or "", fingerprint)
            if stored is None and self._has_history(tx):  # charges of an unknown interface
                raise needs_migration(self._where, "charges without an interface fingerprint")
            carried = [] if caps_for is None else self._carried(tx, caps_for)
            for key, spent, caps in carried:
                self._write_caps(tx, key, spent, caps)
            self._write_fingerprint(tx, fingerprint)
            self._write_meta(tx, rows)
            if self.CHAINED:
                marks.append(self._append_chain(tx, "rebind", rebind_body(expected, fingerprint, rows, carried)))

        self._transaction(work)
        self._committed(marks[-1] if marks else None)

    def _carried(self, tx: Tx, caps_for: CapsFor) -> list[Carried]:
        """Each session `caps_for` gives caps, in `_session_keys` order (the rebind event's):
        its ledgers under the new caps (new attributes at 0, C5 re-checked), nothing written."""
        carried = []
        for key in self._session_keys(tx):
            caps = caps_for(key)
            if caps is None:
                continue
            table = rebound_caps(self._session_ledgers(tx, key), caps, f"session {key.user}/{key.interaction}")
            carried.append((key, {a: s for a, (s, _) in table.items()}, {a: c for a, (_, c) in table.items()}))
        return carried

    def fault(self, point: str) -> None:
        """Tests only: "charge:inside" before COMMIT, "charge:committed" right after it."""
        if self._fault_hook is not None:
            self._fault_hook(point)

    # ------------------------------------------------------------------ primitives

    @property
    @abstractmethod
    def _where(self) -> str:
        """The database as error messages name it (redacted)."""

    @abstractmethod
    def _transaction(self, work: Callable[[Tx], _T], resolve: Callable[[Tx], _T | None] | None = None) -> _T:
        """`work` in ONE write transaction, rolled back on any error (driver errors become one
        LedgerStoreError line). `resolve`: after a lost COMMIT answer, whether it committed
        (its non-None answer is the result); backends that cannot lose one ignore it."""

    def _lock_writes(self, tx: Tx) -> None:
        """First statement of every write transaction (PostgreSQL: the chain's lock)."""

    @abstractmethod
    def _read_fingerprint(self, tx: Tx) -> str | None: ...

    @abstractmethod
    def _has_history(self, tx: Tx) -> bool:
        """Committed releases or turns (refuse binding a fingerprint to them)."""

    @abstractmethod
    def _write_fingerprint(self, tx: Tx, fingerprint: str) -> None:
        """Insert or replace the binding."""

    @abstractmethod
    def _open_rows(self, tx: Tx, key: SessionKey, caps: dict[str, Fraction]) -> tuple[dict[str, Fraction] | None, bool]:
        """Create the session's ledgers at zero unless present: (the caps stored before, or None
        if there were none; whether rows were created)."""

    @abstractmethod
    def _session_keys(self, tx: Tx) -> list[SessionKey]:
        """Every session with ledgers, in the order a rebind event lists them."""

    @abstractmethod
    def _session_ledgers(self, tx: Tx, key: SessionKey) -> dict[str, Fraction]:
        """A session's spent ledgers, locked until COMMIT (the databases check every stored L_a <= B_a)."""

    @abstractmethod
    def _write_caps(self, tx: Tx, key: SessionKey, spent: dict[str, Fraction], caps: dict[str, Fraction]) -> None:
        """Store a carried session's caps and ledgers (`_carried`: unchanged, new attributes at 0)."""

    @abstractmethod
    def _write_meta(self, tx: Tx, rows: Mapping[str, str]) -> None:
        """Insert or replace extra meta rows (keys checked by `checked_rebind`)."""

    def _append_chain(self, tx: Tx, kind: str, body: str) -> HighWater:
        """Append one chain event in the transaction (only called when CHAINED)."""
        raise NotImplementedError(f"{type(self).__name__} keeps no chain")

    def _committed(self, mark: HighWater | None) -> None:
        """After COMMIT: the head of the chain this transaction committed (None: no event)."""

    def _verify_served(self, tx: Tx, scopes: Sequence[Served]) -> None:
        """Chained stores: before a load serves rows or a charge admits a release, in the same
        snapshot or transaction, the scopes' ledgers, caps and served rows against the chain
        as verified since the open (`checkpoint.LiveVerification`); raises LedgerStoreError."""

    @abstractmethod
    def _session(self, key: SessionKey) -> S: ...


class TemplateSession(ABC, Generic[Tx]):
    """The session half of the template: the charge and the turn record, over the primitives below."""

    __slots__ = ()
    key: SessionKey

    @property
    @abstractmethod
    def backend(self) -> LedgerBackend[Tx, Any]:
        """The store the session was opened on (each backend's session holds it as a field)."""

    def charge_and_record(self, request: ReleaseRequest, also: Sequence[SessionKey] = ()) -> ReleaseOutcome:
        """ONE transaction (Algorithm 1, line 15, against committed state): C5 re-checked on
        every scope's committed ledgers, the charge to every scope, the release row and its
        chain event; release the outcome's view only after this returns."""
        backend = self.backend
        keys = check_scope_keys(self.key, also)
        marks: list[HighWater] = []

        def work(tx: Tx) -> ReleaseOutcome:
            marks.clear()
            backend._lock_writes(tx)
            if self._release_id_taken(tx, request.release_id):
                raise id_used_before("release_id", request.release_id)
            scopes = self._read_ledgers(tx, keys, lock=True)  # the scopes' write locks
            backend._verify_served(tx, [(k, spent, caps, None) for k, (spent, caps) in zip(keys, scopes, strict=True)])
            charged = committed_scopes(scopes, request)
            for scope_key, ledgers, (_, caps) in zip(keys, charged or (), scopes, strict=False):
                assert_within_caps(scope_key, ledgers, caps)  # every scope, before any write
            for scope_key, ledgers in zip(keys, charged or (), strict=False):
                self._write_charge(tx, scope_key, ledgers, request.charge_set)
            row = self._insert_release(tx, request, charged is not None)
            if row is None:
                raise id_used_before("release_id", request.release_id)
            committed = charged if charged is not None else [spent for spent, _ in scopes]
            if backend.CHAINED:
                others = list(zip(keys[1:], committed[1:], strict=True))  # the other scopes debited
                marks.append(backend._append_chain(tx, "charge", charge_body(self.key, row, committed[0], others)))
            backend.fault("charge:inside")
            return ReleaseOutcome.of(row, committed[0], committed[1:])

        def resolve(tx: Tx) -> ReleaseOutcome | None:
            return self.resolve_charge(tx, request, keys)

        outcome = backend._transaction(work, resolve)
        backend._committed(marks[-1] if marks else None)
        backend.fault("charge:committed")
        return outcome

    def resolve_charge(self, tx: Tx, request: ReleaseRequest, keys: Sequence[SessionKey]) -> ReleaseOutcome | None:
        """After a lost COMMIT answer: did the charge commit? Then the committed row (never the
        request's candidate) and the scopes' ledgers now are the outcome; None: run it again."""
        found = self._find_release(tx, request.release_id)
        if found is None:
            return None
        committed = [spent for spent, _ in self._read_ledgers(tx, keys, lock=False)]
        return ReleaseOutcome.of(found, committed[0], committed[1:])

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        """ONE transaction: append a completed turn to the released history, with its chain event."""
        backend = self.backend
        check_turn_id(turn_id)
        text = encode_turn(record)
        marks: list[HighWater] = []

        def work(tx: Tx) -> bool:
            marks.clear()
            backend._lock_writes(tx)
            seq = self._insert_turn(tx, turn_id, text)
            if seq is None:
                raise id_used_before("turn_id", turn_id)
            if backend.CHAINED:
                marks.append(backend._append_chain(tx, "turn", turn_body(self.key, seq, turn_id, text)))
            return True

        def resolve(tx: Tx) -> bool | None:
            return True if self._turn_committed(tx, turn_id) else None

        backend._transaction(work, resolve)
        backend._committed(marks[-1] if marks else None)

    # ------------------------------------------------------------------ primitives

    def _release_id_taken(self, tx: Tx, release_id: str) -> bool:
        """Checked first (the SQL stores leave it to their UNIQUE index: `_insert_release`)."""
        return False

    @abstractmethod
    def _read_ledgers(self, tx: Tx, keys: Sequence[SessionKey], lock: bool) -> list[Ledgers]:
        """(spent, caps) of each scope in `keys` order, every stored L_a <= B_a checked (C5);
        `lock`: held until COMMIT against concurrent charges."""

    @abstractmethod
    def _write_charge(self, tx: Tx, key: SessionKey, ledgers: dict[str, Fraction], charge_set: frozenset[str]) -> None:
        """Store the ledgers of `charge_set` after the charge (the others are unchanged)."""

    @abstractmethod
    def _insert_release(self, tx: Tx, request: ReleaseRequest, admitted: bool) -> SlotRelease | None:
        """Append the release row (`contract.release_row`): the row with its seq, or None when
        its release id was used before."""

    def _find_release(self, tx: Tx, release_id: str) -> SlotRelease | None:
        """The committed release row of `release_id` (only backends that can lose an answer)."""
        return None

    @abstractmethod
    def _insert_turn(self, tx: Tx, turn_id: str, text: str) -> int | None:
        """Append the turn (`encode_turn` text): its seq, or None when its turn id was used before."""

    def _turn_committed(self, tx: Tx, turn_id: str) -> bool:
        return False
