"""A ledger database is bound to ONE interface by its canonical fingerprint.

Every part that decides a charge or its amount changes the fingerprint; equal interfaces
(however written) give equal ones. A second interface on a bound database is refused with
one line, also when processes with the two interfaces race to open it (SQLite and
PostgreSQL): 0 overruns and 0 uncharged releases.
"""

from __future__ import annotations

import copy
import multiprocessing
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import SQLiteLedgerStore, interface_fingerprint, open_ledger_store
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

CAP = 2
BASE: dict[str, Any] = {
    "name": "two-positions",
    "positions": ["food", "food"],
    "attributes": {"diabetes": {"group": [1], "cap": CAP}, "debt": {"group": [2], "cap": CAP}},
    "budget": {"rule": "online", "K": 3},
    "slots": {
        "food": {
            "generic": "balanced",
            "views": {"balanced": {}, "low-glycemic": {"compatible": ["blood-sugar"], "specific": ["blood-sugar"]}},
        }
    },
    "queries": [{"name": "dinner", "reads": [{"slot": "food", "positions": [1]}]}],
    "stores": {"M": {"1": {"tags": ["blood-sugar"], "text": "private"}, "2": {"tags": [], "text": "other"}}},
}


def variant(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    change(data)
    return data


VARIANTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "groups swapped (equal caps)": lambda d: d["attributes"].update(
        {"diabetes": {"group": [2], "cap": CAP}, "debt": {"group": [1], "cap": CAP}}
    ),
    "group widened": lambda d: d["attributes"]["diabetes"].update(group=[1, 2]),
    "cap": lambda d: d["attributes"]["debt"].update(cap=3),
    "budget K": lambda d: d["budget"].update(K=4),
    "budget rule": lambda d: d.update(budget={"rule": "preallocated", "plan": {"diabetes": 3, "debt": 3}}),
    "read set": lambda d: d["queries"][0]["reads"][0].update(positions=[1, 2]),
    "charge declaration": lambda d: d["queries"][0]["reads"][0].update(charge=["diabetes", "debt"]),
    "new route": lambda d: d["queries"].append({"name": "lunch", "reads": [{"slot": "food", "positions": [2]}]}),
    "layout": lambda d: (
        d.update(positions=["food", "drink"])
        or d["slots"].update(drink={"generic": "water", "views": {"water": {}}})
        or d["queries"].append({"name": "drink", "reads": [{"slot": "drink", "positions": [2]}]})
    ),
    "scorer sensitivity": lambda d: d.update(scorer={"kind": "linear", "sensitivity": "4/5"}),
    "vocabulary": lambda d: d["slots"]["food"]["views"].update({"high-protein": {}}),
}


def fingerprint(data: dict[str, Any]) -> str:
    return interface_fingerprint(interface_from_dict(data).interface)


def test_equal_interfaces_have_equal_fingerprints() -> None:
    reordered = copy.deepcopy(BASE)
    reordered["attributes"] = dict(reversed(list(BASE["attributes"].items())))
    reordered["stores"] = {"M": {"1": {"tags": [], "text": "a different memory"}}}  # stores are not the interface
    assert fingerprint(BASE) == fingerprint(copy.deepcopy(BASE)) == fingerprint(reordered)
    assert len(fingerprint(BASE)) == 64


def test_every_charge_deciding_part_changes_the_fingerprint() -> None:
    seen = {fingerprint(BASE): "base"}
    for name, change in VARIANTS.items():
        value = fingerprint(variant(change))
        assert value not in seen, f"{name} gives the fingerprint of {seen.get(value)}"
        seen[value] = name


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_second_interface_is_refused_with_one_line(name: str, tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    first = interface_from_dict(BASE)
    session = DurableSession.open(
        first.interface, SQLiteLedgerStore(path), "u", "i", first.store("M"), SeededRandomSource(0)
    )
    session.run_turn("dinner")
    other = interface_from_dict(variant(VARIANTS[name]))
    with pytest.raises(InputError) as refused:
        DurableSession.open(other.interface, SQLiteLedgerStore(path), "u", "i", other.store("M"), SeededRandomSource(0))
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and "different interface" in message
    assert len(session.state().history) == 1  # the refusal wrote nothing


# ----------------------------------------------------------------------------- race

PROCESSES = 8
TURNS = 20
# Equal caps, different groups: under B, reading position 1 touches no group and is
# uncharged, while under A it is a diabetes read. Sharing one ledger would release A's
# diabetes reads uncharged.
INTERFACE_A = variant(lambda d: d["attributes"]["debt"].update(group=[2]))
INTERFACE_B = variant(VARIANTS["groups swapped (equal caps)"])


def _racer(url: str, which: int, barrier: Any, results: Any) -> None:
    loaded = interface_from_dict(INTERFACE_A if which == 0 else INTERFACE_B)
    ledger_store = open_ledger_store(url)
    barrier.wait()
    try:
        session = DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(which))
    except InputError as error:
        results.put((which, "refused", str(error)))
        return
    for _ in range(TURNS):
        session.run_turn("dinner")
    results.put((which, "ran", ""))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("repetition", range(3))
def test_racing_interfaces_one_wins_the_other_is_refused(kind: str, repetition: int, tmp_path: Path) -> None:
    path = str(tmp_path / "race.db") if kind == "sqlite" else postgres_server.new_database()
    open_ledger_store(path).close()  # the schema exists; no interface bound yet
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    workers = [
        context.Process(target=_racer, args=(path, (i + repetition) % 2, barrier, results)) for i in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    winners = {which for which, status, _ in outcomes if status == "ran"}
    assert len(winners) == 1  # exactly one interface ran
    losers = [text for which, status, text in outcomes if status == "refused"]
    assert len(losers) == PROCESSES // 2 and all("different interface" in text for text in losers)
    (winner,) = winners
    data = INTERFACE_A if winner == 0 else INTERFACE_B
    loaded = interface_from_dict(data)
    ledger_store = open_ledger_store(path)
    assert ledger_store.fingerprint == interface_fingerprint(loaded.interface)
    snapshot = ledger_store.open_session("u", "i", loaded.interface.caps).load()
    assert len(snapshot.history) == TURNS * PROCESSES // 2
    running: dict[str, Fraction] = {a: Fraction(0) for a in loaded.interface.caps}
    for release in snapshot.releases:  # 0 overruns at any prefix of the commit order
        for attribute in release.charge_set:
            running[attribute] += release.epsilon
            assert running[attribute] <= CAP
    assert running == snapshot.ledger_map()
    # 0 uncharged releases: every admitted release charged the group its read touches.
    touched = "diabetes" if winner == 0 else "debt"
    admitted = [r for r in snapshot.releases if r.admitted]
    assert admitted and all(r.charge_set == {touched} and r.epsilon > 0 for r in admitted)
    ledger_store.close()
