"""The durable session's race and retry paths, reached at every
slot of a multi-slot turn and on every ledger backend (memory, SQLite, PostgreSQL).

Each test names a path and asserts that it was taken (`turn.plans`, the committed rows):

- a lost race at slot k: another session of the same (user, interaction) spends the budget
  between slot k's plan and its charge; the store refuses the charge (all or none), the
  generic view is released, nothing is charged, and the later slots are planned from the
  committed ledgers;
- a race that touches only attributes outside slot k's charge set is not lost;
- PostgreSQL's retry path after a lost COMMIT answer: the COMMIT happened, the connection
  broke before the client heard it, and the release is resolved from the committed row
  (charged exactly once), never re-drawn or released uncharged.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.config.load import InterfaceFile, interface_from_dict
from dpmem_ref.ledger import LedgerStore, MemoryLedgerStore, SessionSnapshot, SQLiteLedgerStore, open_ledger_store
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession, DurableTurn

CAP = 100
HALF = Fraction(CAP, 2)
# Position 1 (slot s) lies in both groups, position 2 (slot t) in b only, position 3 (slot
# u) in a only. "both" is a two-slot turn: s charged {a, b}, then t charged {b}; eps = B/K
# = 50 everywhere, so two charges fill a cap. At eps = 50 every admitted draw is the
# specific view (the generic one has probability ~e^-41): a refused slot that released its
# candidate would show it, whatever the seed.
RACE: dict[str, Any] = {
    "name": "race",
    "positions": ["s", "t", "u"],
    "attributes": {"a": {"group": [1, 3], "cap": CAP}, "b": {"group": [1, 2], "cap": CAP}},
    "budget": {"rule": "online", "K": 2},
    "slots": {
        slot: {"generic": f"{slot}-generic", "views": {f"{slot}-generic": {}, f"{slot}-x": {"compatible": ["x"], "specific": ["x"]}}}
        for slot in ("s", "t", "u")
    },
    "queries": [
        {"name": "both", "reads": [{"slot": "s", "positions": [1]}, {"slot": "t", "positions": [2]}]},
        {"name": "spend-a", "reads": [{"slot": "u", "positions": [3]}]},
        {"name": "spend-b", "reads": [{"slot": "t", "positions": [2]}]},
    ],
    "stores": {"M": {str(p): {"tags": ["x"], "text": f"item {p}"} for p in (1, 2, 3)}},
}
KINDS = ["memory", "sqlite", "postgres"]


def open_store(kind: str, tmp_path: Path) -> LedgerStore:
    if kind == "memory":
        return MemoryLedgerStore()
    if kind == "sqlite":
        return SQLiteLedgerStore(tmp_path / "race.db")
    return open_ledger_store(postgres_server.new_database())  # a real server (skips if none starts)


BUDGETS = {"online": {"rule": "online", "K": 2}, "preallocated": {"rule": "preallocated", "plan": {"a": 2, "b": 2}}}


@pytest.fixture(params=sorted(BUDGETS))
def loaded(request: pytest.FixtureRequest) -> InterfaceFile:
    """The race interface under each budget rule (eps = B/K = B/C_a = 50 either way)."""
    return interface_from_dict({**RACE, "budget": BUDGETS[request.param]})


def check_committed_rows(loaded: InterfaceFile, snapshot: SessionSnapshot) -> None:
    """Every committed row: admitted => charged its read's charge set at eps > 0, the
    ledgers within their caps at every prefix of the commit order; refused => the generic
    view at no charge; the ledgers are the sum of the admitted charges."""
    interface = loaded.interface
    generic = {v.slot: v.generic for v in interface.vocabularies}
    charge_of = {r.slot: interface.charge_plan(r).charge_set for q in interface.queries for r in q.reads}
    running = {a: Fraction(0) for a in interface.caps}
    for release in snapshot.releases:
        if release.admitted:
            assert release.charge_set == charge_of[release.slot] and release.epsilon > 0
            for attribute in release.charge_set:
                running[attribute] += release.epsilon
                assert running[attribute] <= interface.caps[attribute]
        else:
            assert release.view == generic[release.slot]
            assert release.charge_set == frozenset() and release.epsilon == 0
    assert running == snapshot.ledger_map()


def race_at(
    loaded: InterfaceFile, ledger_store: LedgerStore, slot_index: int, spend: str, times: int
) -> tuple[DurableTurn, DurableSession]:
    """Run "both"; just before the charge of slot `slot_index`, another session of the same
    interaction runs `spend` `times` times (it commits first)."""
    other = DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(1))
    seen: list[str] = []

    def spend_meanwhile(point: str) -> None:
        if point == "slot:before-charge":
            seen.append(point)
            if len(seen) == slot_index + 1:
                for _ in range(times):
                    other.run_turn(spend)

    session = DurableSession.open(
        loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(2), checkpoint=spend_meanwhile
    )
    turn = session.run_turn("both")
    assert len(seen) == 2  # both slots reached their charge
    return turn, session


# (slot raced, query spent meanwhile, times, admitted per slot, final ledgers a, b)
SCENARIOS = {
    "slot 0 loses on a": (0, "spend-a", 2, (False, True), (CAP, HALF)),
    "slot 0 loses on b (all or none: a untouched), slot 1 planned out": (0, "spend-b", 2, (False, False), (0, CAP)),
    "slot 1 loses on b after slot 0 charged": (1, "spend-b", 1, (True, False), (HALF, CAP)),
    "slot 1 raced on a only: not lost": (1, "spend-a", 1, (True, True), (CAP, CAP)),
}


@pytest.fixture(params=KINDS)
def ledger_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    backend = open_store(request.param, tmp_path)
    yield backend
    backend.close()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_race_at_any_slot_releases_only_committed_charges(
    scenario: str, ledger_store: LedgerStore, loaded: InterfaceFile
) -> None:
    slot_index, spend, times, admitted, (a, b) = SCENARIOS[scenario]
    turn, session = race_at(loaded, ledger_store, slot_index, spend, times)
    assert tuple(plan.admitted for plan in turn.plans) == admitted  # the named path was taken
    assert turn.record.admitted == admitted == tuple(r.admitted for r in turn.releases)
    assert turn.record.views == tuple((r.slot, r.view) for r in turn.releases)
    for release, was_admitted in zip(turn.releases, admitted, strict=True):
        assert (release.view != f"{release.slot}-generic") == was_admitted  # M tags every item "x"
        assert (release.epsilon == HALF) == was_admitted
    snapshot = session.ledgers.load()
    committed = {r.release_id: r for r in snapshot.releases}
    assert all(committed[r.release_id] == r for r in turn.releases)  # released == committed
    check_committed_rows(loaded, snapshot)
    assert snapshot.ledger_map() == {"a": a, "b": b}
    assert session.state().ledgers == turn.state.ledgers == (a, b)
    control = dict(turn.record.control)  # type: ignore[arg-type]
    assert control == {r.slot: "released" if r.admitted else "fallback" for r in turn.releases}


@pytest.mark.parametrize("race", [False, True], ids=["both admitted", "slot 1 refused at commit"])
def test_postgres_lost_commit_answer_resolves_to_the_committed_release(race: bool, loaded: InterfaceFile) -> None:
    """The COMMIT reaches the server, then the connection breaks before the client hears
    the answer: the retry path must find the committed row and release exactly it (with
    `race`, that row is the refusal: another session spent b before slot 1's charge)."""
    url = postgres_server.new_database()
    from dpmem_ref.ledger.postgres import PostgresLedgerStore

    cut: list[int] = []
    ledger_store: PostgresLedgerStore

    def commit_then_cut(point: str) -> None:
        if point == "charge:inside" and len(cut) < 2:  # at both slots of the turn
            connection = ledger_store.connect()
            connection.execute("COMMIT")  # the transaction's work is now committed
            cut.append(connection.info.backend_pid)
            postgres_server.admin_execute(url, f"SELECT pg_terminate_backend({cut[-1]})")

    ledger_store = PostgresLedgerStore(url, fault_hook=commit_then_cut)
    other = DurableSession.open(loaded.interface, open_ledger_store(url), "u", "i", loaded.store("M"), SeededRandomSource(1))
    charges: list[str] = []

    def spend_before_slot_1(point: str) -> None:
        if point == "slot:before-charge":
            charges.append(point)
            if race and len(charges) == 2:
                other.run_turn("spend-b")

    session = DurableSession.open(
        loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(3), checkpoint=spend_before_slot_1
    )
    turn = session.run_turn("both")
    assert len(cut) == 2  # the retry path ran at slot 0 and at slot 1
    snapshot = session.ledgers.load()
    mine = tuple(r for r in snapshot.releases if r.turn_id == turn.releases[0].turn_id)
    assert mine == turn.releases  # resolved, not re-run: one row per slot, released as committed
    assert turn.record.views == tuple((r.slot, r.view) for r in mine)
    assert turn.record.admitted == ((True, False) if race else (True, True))
    assert turn.record.views[1] == (("t", "t-generic") if race else ("t", "t-x"))
    assert snapshot.ledger_map() == {"a": HALF, "b": CAP}  # each charge committed exactly once
    check_committed_rows(loaded, snapshot)
    ledger_store.close()
