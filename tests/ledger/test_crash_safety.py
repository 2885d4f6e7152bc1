"""Crash safety: SIGKILL a worker at random points; charges are never lost.

Each trial forks a worker that serves Figure 2 turns through a DurableSession on one
shared SQLite file and reports every released view on a pipe the moment it is released.
The worker is killed with SIGKILL either at a chosen checkpoint (before the charge
transaction, inside it before COMMIT, right after COMMIT, before release, after release,
around the turn record) or by the harness after a random delay. Afterwards:
- every view the worker released has a committed release row (same view) and, if it
  was a charged selection, its committed charge;
- the committed ledgers equal the sum of the committed charges, and L_a <= B_a;
- the store passes PRAGMA integrity_check and `dpmem ledger verify` (the keyed chain,
  the high-water mark), and a new session continues the interaction.
Default run: 60 trials; `-m slow`: 240 trials.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.ledger import SessionSnapshot, SlotRelease, SQLiteLedgerStore
from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

FIGURE2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"
QUERIES = ["affordable-dinner", "checkup-reminder", "affordable-dinner", "weeknight-plan", "checkup-reminder"]
POINTS = [
    "turn:start",
    "slot:before-charge",
    "charge:inside",
    "charge:committed",
    "slot:before-release",
    "slot:released",
    "turn:before-record",
    "turn:recorded",
]


# --- the harness, shared with the PostgreSQL fault tests (test_ledger_postgres.py) ---------


def kill_at(point: str | None, nth: int) -> Callable[[str], None]:
    """A fault hook / checkpoint that SIGKILLs this process at the nth hit of `point`."""
    hits = Counter[str]()

    def maybe_die(name: str) -> None:
        hits[name] += 1
        if name == point and hits[name] == nth:
            os.kill(os.getpid(), signal.SIGKILL)

    return maybe_die


def release_reporter(fd: int) -> Callable[[SlotRelease], None]:
    """`on_release`: the release itself. Once these bytes are in the pipe, the view is out."""

    def report(release: SlotRelease) -> None:
        os.write(fd, f"{release.release_id} {release.view} {int(release.admitted)}\n".encode())

    return report


def read_released(read_fd: int) -> list[list[str]]:
    """Every (release_id, view, admitted) line a worker wrote before it exited or died."""
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    return [line.split() for line in b"".join(chunks).decode().splitlines()]


def check_every_release_charged(snapshot: SessionSnapshot, caps: Mapping[str, Fraction], released: list[list[str]]) -> None:
    """Every released view has its committed row (same view) and, if it was a charged
    selection, its committed charge; the ledgers are the sum of the committed charges; L <= B."""
    rows = {r.release_id: r for r in snapshot.releases}
    for release_id, view, admitted in released:
        row = rows[release_id]
        assert row.view == view and row.admitted == (admitted == "1")
        if row.admitted and row.charge_set:
            assert row.epsilon > 0
    totals = {a: Fraction(0) for a in caps}
    for row in snapshot.releases:
        for attribute in row.charge_set:
            totals[attribute] += row.epsilon
    assert totals == snapshot.ledger_map()  # the charge and its row commit together
    assert all(totals[a] <= caps[a] for a in caps)


# --- SQLite -------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _keyed_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain on, keyed: forked workers inherit the key."""
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "crash-and-race-key-0123456789abcdef")
    monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)


def _worker(path: str, interaction: str, point: str | None, nth: int, seed: int, fd: int) -> None:
    loaded = load_interface_file(FIGURE2)
    maybe_die, report = kill_at(point, nth), release_reporter(fd)
    ledger_store = SQLiteLedgerStore(path, fault_hook=maybe_die)
    session = DurableSession.open(
        loaded.interface,
        ledger_store,
        "user",
        interaction,
        loaded.store("M"),
        SeededRandomSource(seed),
        checkpoint=maybe_die,
        on_release=report,
    )
    for query in QUERIES:
        session.run_turn(query)
    os._exit(0)


def _trial(path: Path, interaction: str, rng: random.Random) -> str:
    context = multiprocessing.get_context("fork")
    read_fd, write_fd = os.pipe()
    timer = rng.random() < 0.25
    point = None if timer else rng.choice(POINTS)
    nth = rng.randint(1, 4)
    worker = context.Process(
        target=_worker, args=(str(path), interaction, point, nth, rng.randrange(1 << 30), write_fd)
    )
    worker.start()
    os.close(write_fd)
    if timer:
        time.sleep(rng.uniform(0.0, 0.25))
        if worker.is_alive():
            os.kill(worker.pid or 0, signal.SIGKILL)
    worker.join(timeout=120)
    released = read_released(read_fd)
    killed = worker.exitcode == -signal.SIGKILL
    assert killed or worker.exitcode == 0, worker.exitcode
    _verify(path, interaction, released)
    if not killed:
        return "completed"
    return "timer" if timer else str(point)


def _verify(path: Path, interaction: str, released: list[list[str]]) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = SQLiteLedgerStore(path)
    assert ledger_store.integrity_check() == "ok"
    snapshot = ledger_store.open_session("user", interaction, loaded.interface.caps).load()
    check_every_release_charged(snapshot, loaded.interface.caps, released)
    ledger_store.close()
    report = verify_sqlite(path)  # the chain verifies after every kill (and reaches its mark)
    assert report.ok, report.line()


def _run(tmp_path: Path, trials: int, seed: int) -> Counter[str]:
    rng = random.Random(seed)
    path = tmp_path / "crash.db"
    outcomes = Counter[str]()
    interaction = "t0"
    for trial in range(trials):
        if rng.random() < 0.7:  # otherwise resume the crashed interaction (restart path)
            interaction = f"t{trial}"
        outcomes[_trial(path, interaction, rng)] += 1
    # After all the kills, a fresh process-level session continues cleanly.
    loaded = load_interface_file(FIGURE2)
    ledger_store = SQLiteLedgerStore(path)
    session = DurableSession.open(loaded.interface, ledger_store, "user", "after", loaded.store("M"), SeededRandomSource(0))
    assert session.run_turn("affordable-dinner").record.admitted == (True, True)
    assert ledger_store.integrity_check() == "ok"
    return outcomes


def test_sigkill_at_random_points_never_loses_a_charge(tmp_path: Path) -> None:
    outcomes = _run(tmp_path, 60, seed=1)
    assert sum(outcomes.values()) == 60
    assert {"charge:inside", "charge:committed", "slot:before-release"} <= set(outcomes)


@pytest.mark.slow
def test_sigkill_240_trials(tmp_path: Path) -> None:
    started = time.perf_counter()
    outcomes = _run(tmp_path, 240, seed=2)
    print(f"\ncrash safety: 240 trials in {time.perf_counter() - started:.1f} s, outcomes {dict(sorted(outcomes.items()))}")
    assert sum(outcomes.values()) == 240
    assert set(POINTS) <= set(outcomes)


# A kill at the SECOND slot of a multi-slot turn (affordable-dinner: food, then
# finance), at every slot-level point; the rows committed by then are exactly the slots
# whose charge transaction had committed, each charged, and a new session continues.
SECOND_SLOT_ROWS = {
    "slot:before-charge": 1,
    "charge:inside": 1,  # the second charge rolls back with the kill
    "charge:committed": 2,
    "slot:before-release": 2,
    "slot:released": 2,
}


@pytest.mark.parametrize("point", sorted(SECOND_SLOT_ROWS))
def test_sigkill_at_the_second_slot_of_a_turn(point: str, tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    context = multiprocessing.get_context("fork")
    read_fd, write_fd = os.pipe()
    worker = context.Process(target=_worker, args=(str(path), "second-slot", point, 2, 7, write_fd))
    worker.start()
    os.close(write_fd)
    worker.join(timeout=120)
    released = read_released(read_fd)
    assert worker.exitcode == -signal.SIGKILL  # killed at the point's 2nd hit: the 2nd slot
    _verify(path, "second-slot", released)
    loaded = load_interface_file(FIGURE2)
    ledger_store = SQLiteLedgerStore(path)
    snapshot = ledger_store.open_session("user", "second-slot", loaded.interface.caps).load()
    assert [r.slot for r in snapshot.releases] == ["food", "finance"][: SECOND_SLOT_ROWS[point]]
    assert [r.index for r in snapshot.releases] == [0, 1][: SECOND_SLOT_ROWS[point]]
    assert snapshot.history == ()  # the turn was never recorded
    session = DurableSession.open(loaded.interface, ledger_store, "user", "second-slot", loaded.store("M"), SeededRandomSource(0))
    assert session.run_turn("affordable-dinner").record.query == "affordable-dinner"
    ledger_store.close()
