"""`dpmem ledger migrate DB|URL --interface FILE`: bind and chain a legacy ledger.

A database written before the chain (schema 1: every file of the old main) or whose
charges were written without an interface fingerprint is refused on open; the operator
migrates it once, naming the interface that wrote it. One transaction, for SQLite and
PostgreSQL alike (`migrate_rows` over a backend's `Sql` adapter):

1. a fingerprint already stored must be the named interface's (else refused);
2. the rows must be consistent: every ledger L_a equals the sum of its admitted charges
   and is <= B_a, no fallback carries a charge, no charged release has eps 0, every turn
   belongs to an opened session (else refused, nothing written);
3. the charge log must be one the NAMED interface could have written (`Routes`, replayed
   row by row): every release's slot is one of its slots and its view in that slot's
   vocabulary, a fallback releases the generic view, a charged release's (charge set, eps)
   is that of a read of that slot in the query catalogue (Eq. 4, line 8) and, when its turn
   was recorded, exactly that of the turn's query's read of that slot; every recorded turn
   names one of its queries; the caps are its caps. Any disagreement is refused in one
   line naming the row (equal caps alone no longer bind a ledger to an interface);
3. the chain is written from the rows (genesis, `migrate` with the fingerprint, `open` per
   session, `charge` per release in seq order, `turn` per turn), meta set to schema 2.
A schema-2 database that has a chain but no fingerprint gets the `migrate` event only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.chain import (
    ChainKey,
    HighWater,
    bind_body,
    charge_body,
    genesis_body,
    open_body,
    turn_body,
)
from dpmem_ref.ledger.codecs import decode_release, decode_turn, fraction_from_text
from dpmem_ref.ledger.contract import LEGACY_SCHEMA_VERSION, SCHEMA_VERSION, LedgerStoreError, interface_mismatch
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.verify import LedgerRows, replay

if TYPE_CHECKING:
    from dpmem_ref.interface import Interface

Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


@attrs.frozen
class Sql:
    """A backend's statements: `query` runs the SQLite spelling (the PostgreSQL adapter
    renames tables and columns), `append` appends one chain event in the transaction."""

    query: Query
    append: Callable[[str, str], HighWater]


_RELEASES = (
    "SELECT user, interaction, seq, release_id, turn_id, slot_index, slot, view, admitted, charge_set, epsilon "
    "FROM releases ORDER BY seq"
)


@attrs.frozen
class Routes:
    """What the named interface lets a release row be (step 3 of the module docstring)."""

    by_slot: dict[str, frozenset[tuple[frozenset[str], Fraction]]]
    by_query: dict[tuple[str, str], tuple[frozenset[str], Fraction]]
    views: dict[str, frozenset[str]]
    generic: dict[str, str]
    caps: dict[str, Fraction]

    @classmethod
    def of(cls, interface: Interface) -> Routes:
        by_slot: dict[str, set[tuple[frozenset[str], Fraction]]] = {}
        by_query: dict[tuple[str, str], tuple[frozenset[str], Fraction]] = {}
        for query in interface.queries:
            for read in query.reads:
                plan = interface.charge_plan(read)
                by_slot.setdefault(read.slot, set()).add((plan.charge_set, plan.epsilon))
                by_query[(query.name, read.slot)] = (plan.charge_set, plan.epsilon)
        return cls(
            by_slot={s: frozenset(v) for s, v in by_slot.items()},
            by_query=by_query,
            views={v.slot: frozenset(view.name for view in v.views) for v in interface.vocabularies},
            generic={v.slot: v.generic for v in interface.vocabularies},
            caps=dict(interface.caps),
        )


def _replay_routes(sql: Sql, routes: Routes, refuse: Callable[[str], LedgerStoreError]) -> None:
    """Step 3: every release row and turn against the named interface's routes."""
    queries: dict[str, str] = {}
    for turn_id, record in sql.query("SELECT turn_id, record FROM turns ORDER BY seq", ()):
        try:
            name = decode_turn(str(record)).query
        except (InputError, LedgerStoreError, ValueError, TypeError, KeyError):
            raise refuse(f"turn {str(turn_id)[:40]!r}: an unreadable turn record") from None
        if not any(q == name for q, _ in routes.by_query):
            raise refuse(f"turn {str(turn_id)[:40]!r}: query {name[:40]!r} is not a query of the named interface")
        queries[str(turn_id)] = name
    for row in sql.query(_RELEASES, ()):
        release = decode_release(row[2:])
        where = f"releases seq {release.seq}"
        if release.slot not in routes.views:
            raise refuse(f"{where}: slot {release.slot[:40]!r} is not a slot of the named interface")
        if release.view not in routes.views[release.slot]:
            raise refuse(f"{where}: view {release.view[:40]!r} is not in slot {release.slot}'s vocabulary")
        if not release.admitted:
            if release.view != routes.generic[release.slot]:
                raise refuse(f"{where}: a fallback that does not release the slot's generic view")
            continue
        found = (release.charge_set, release.epsilon)
        if release.charge_set and found not in routes.by_slot.get(release.slot, frozenset()):
            raise refuse(f"{where}: charge set {sorted(release.charge_set)} at eps {release.epsilon} is no read of "
                         f"slot {release.slot} in the named interface")  # fmt: skip
        query = queries.get(release.turn_id)
        if query is not None and release.charge_set:
            expected = routes.by_query.get((query, release.slot))
            if expected is None or expected != found:
                raise refuse(f"{where}: query {query[:40]!r} routes slot {release.slot} to another charge set or eps")


def _consistent(sql: Sql, database: str, routes: Routes | None = None) -> dict[SessionKey, dict[str, Fraction]]:
    """The sessions' caps, after checking the rows agree (steps 2 and 3 of the module docstring)."""
    caps: dict[SessionKey, dict[str, Fraction]] = {}
    spent: dict[SessionKey, dict[str, Fraction]] = {}

    def refuse(why: str) -> LedgerStoreError:
        return LedgerStoreError(f"ledger database {database}: not migrated, its rows are inconsistent: {why}")

    try:  # an unreadable value is refused like an inconsistent one: one line naming the database
        for user, interaction, attribute, spent_text, cap_text in sql.query(
            "SELECT user, interaction, attribute, spent, cap FROM ledgers ORDER BY user, interaction, attribute", ()
        ):
            session = SessionKey(user=str(user), interaction=str(interaction))
            caps.setdefault(session, {})[str(attribute)] = fraction_from_text(cap_text, "ledgers.cap")
            spent.setdefault(session, {})[str(attribute)] = fraction_from_text(spent_text, "ledgers.spent")
    except LedgerStoreError as error:
        raise refuse(str(error)) from None
    running = {s: dict.fromkeys(c, Fraction(0)) for s, c in caps.items()}
    for row in sql.query(_RELEASES, ()):
        session = SessionKey(user=str(row[0]), interaction=str(row[1]))
        try:
            release = decode_release(row[2:])
        except LedgerStoreError as error:
            raise refuse(str(error)) from None
        if not release.admitted and (release.charge_set or release.epsilon):
            raise refuse(f"releases seq {release.seq}: a fallback with a charge")
        if release.charge_set and release.epsilon <= 0:
            raise refuse(f"releases seq {release.seq}: a charged release with eps 0")
        for attribute in release.charge_set:
            if attribute not in running.get(session, {}):
                raise refuse(f"releases seq {release.seq}: charged to an attribute without a ledger")
            running[session][attribute] += release.epsilon
            if running[session][attribute] > caps[session][attribute]:
                raise refuse(f"releases seq {release.seq}: the charges exceed the cap of {attribute}")
    if running != spent:
        raise refuse("a ledger differs from the sum of its logged charges")
    if routes is not None:
        for session, session_caps in caps.items():
            if session_caps != routes.caps:
                raise refuse(f"session {session.user}/{session.interaction}: its caps are not the named interface's")
        _replay_routes(sql, routes, refuse)
    for user, interaction in sql.query("SELECT user, interaction FROM turns ORDER BY seq", ()):
        if SessionKey(user=str(user), interaction=str(interaction)) not in caps:
            raise refuse("a turn of a session without ledgers")
    return caps


def _set_meta(sql: Sql, key: str, value: str) -> None:
    sql.query("DELETE FROM meta WHERE key = ?", (key,))
    sql.query("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))


def check_migrated_rows(rows: LedgerRows | str, key: ChainKey, database: str) -> None:
    """Replay what a migration is about to commit, inside its transaction (`rows`: the backend's
    own reading of its tables, or the problem that reading found). A row the chain cannot vouch
    for (a legacy record with a corrupted byte, text verify refuses) refuses the migration, so
    the caller's rollback leaves nothing written rather than a bound ledger that fails verify."""
    problem = rows if isinstance(rows, str) else replay(rows, key, None).problem
    if problem is not None:
        raise LedgerStoreError(f"ledger database {database}: not migrated, the migrated rows do not verify: {problem}")


def migrate_rows(
    sql: Sql, database: str, fingerprint: str, key: ChainKey, routes: Routes | None = None
) -> HighWater | None:
    """Migrate inside the caller's write transaction; the new chain head (None: nothing to do).
    `routes`: the named interface's (`Routes.of`), replayed against the charge log."""
    meta = {str(k): str(v) for k, v in sql.query("SELECT key, value FROM meta", ())}
    stored = meta.get("fingerprint")
    if stored is not None and stored != fingerprint:
        raise interface_mismatch(database, stored, fingerprint)
    if meta.get("schema") not in (LEGACY_SCHEMA_VERSION, SCHEMA_VERSION):
        raise LedgerStoreError(f"ledger database {database}: meta.schema is not version {LEGACY_SCHEMA_VERSION}")
    chained = bool(sql.query("SELECT 1 FROM chain LIMIT 1", ()))
    if meta.get("schema") == SCHEMA_VERSION and not chained and sql.query("SELECT 1 FROM ledgers LIMIT 1", ()):
        raise LedgerStoreError(  # a schema-2 ledger always has a chain: re-chaining its rows would launder them
            f"ledger database {database}: not migrated, a schema-{SCHEMA_VERSION} ledger without its chain was "
            "tampered with (its chain dropped or emptied); put the newest verified backup back with dpmem ledger restore"
        )
    caps = _consistent(sql, database, routes)
    if meta.get("schema") == SCHEMA_VERSION and chained:
        if stored is not None:
            return None  # already bound to this interface
        _set_meta(sql, "fingerprint", fingerprint)
        return sql.append("migrate", bind_body(fingerprint))
    sql.query("DELETE FROM chain", ())  # a schema-1 file: its (new, empty) chain table
    sql.append("genesis", genesis_body(key, SCHEMA_VERSION))
    mark = sql.append("migrate", bind_body(fingerprint))
    spent = {s: dict.fromkeys(c, Fraction(0)) for s, c in caps.items()}
    for session in caps:
        mark = sql.append("open", open_body(session, caps[session]))
    for row in sql.query(_RELEASES, ()):
        session = SessionKey(user=str(row[0]), interaction=str(row[1]))
        release = decode_release(row[2:])
        for attribute in release.charge_set:
            spent[session][attribute] += release.epsilon
        mark = sql.append("charge", charge_body(session, release, spent[session]))
    for user, interaction, seq, turn_id, record in sql.query(
        "SELECT user, interaction, seq, turn_id, record FROM turns ORDER BY seq", ()
    ):
        session = SessionKey(user=str(user), interaction=str(interaction))
        mark = sql.append("turn", turn_body(session, int(seq), str(turn_id), str(record)))
    _set_meta(sql, "fingerprint", fingerprint)
    _set_meta(sql, "schema", SCHEMA_VERSION)
    return mark
