"""Concurrency: 8 processes x 100 charged selections against one SQLite ledger.

B = 2, eps = B/K = 2/3: exactly 3 selections are admitted in total, whatever the
interleaving, and no committed state ever has L > B. The default run repeats 3 times;
`-m slow` runs the acceptance figure of 20 repetitions.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from fractions import Fraction
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.ledger import SQLiteLedgerStore
from dpmem_ref.ledger.backup import verify_sqlite
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

PROCESSES = 8
SELECTIONS = 100
CAP = 2
K = 3

ONE_SLOT: dict[str, Any] = {
    "name": "one-slot",
    "positions": ["food"],
    "attributes": {"diabetes": {"group": [1], "cap": CAP}},
    "budget": {"rule": "online", "K": K},
    "slots": {
        "food": {
            "generic": "balanced",
            "views": {"balanced": {}, "low-glycemic": {"compatible": ["blood-sugar"], "specific": ["blood-sugar"]}},
        }
    },
    "queries": [{"name": "dinner", "reads": [{"slot": "food", "positions": [1]}]}],
    "stores": {"M": {"1": {"tags": ["blood-sugar"], "text": "private"}}},
}


def _worker(path: str, seed: int, barrier: Barrier, results: Any) -> None:
    loaded = interface_from_dict(ONE_SLOT)
    rng = random.Random(seed)
    ledger_store = SQLiteLedgerStore(path)
    session = DurableSession.open(
        loaded.interface, ledger_store, "user", "interaction", loaded.store("M"), SeededRandomSource(seed)
    )
    barrier.wait()
    admitted = 0
    max_seen = Fraction(0)
    for _ in range(SELECTIONS):
        if rng.random() < 0.3:
            time.sleep(rng.random() * 0.002)  # random interleavings
        turn = session.run_turn("dinner")
        admitted += sum(turn.record.admitted)
        max_seen = max(max_seen, max(turn.state.ledgers))
    results.put((admitted, str(max_seen)))
    ledger_store.close()


@pytest.fixture(autouse=True)
def _keyed_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain on, keyed: forked workers inherit the key."""
    monkeypatch.setenv("DPMEM_LEDGER_KEY", "crash-and-race-key-0123456789abcdef")
    monkeypatch.delenv("DPMEM_LEDGER_KEY_FILE", raising=False)


def run_once(path: Path, seed: int) -> tuple[int, list[int], Fraction]:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    SQLiteLedgerStore(path).close()  # create the schema once
    workers = [
        context.Process(target=_worker, args=(str(path), seed * 1000 + i, barrier, results)) for i in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    per_process = [a for a, _ in outcomes]
    assert all(Fraction(m) <= CAP for _, m in outcomes)  # no process ever saw L > B
    ledger_store = SQLiteLedgerStore(path)
    snapshot = ledger_store.open_session("user", "interaction", {"diabetes": Fraction(CAP)}).load()
    assert ledger_store.integrity_check() == "ok"
    ledger_store.close()
    report = verify_sqlite(path)  # the keyed chain of every process's commits verifies
    assert report.ok and report.chain is not None, report.line()
    # The committed record agrees with what the processes observed.
    committed = [r for r in snapshot.releases if r.admitted]
    assert len(snapshot.releases) == PROCESSES * SELECTIONS
    assert len(snapshot.history) == PROCESSES * SELECTIONS
    assert sum(r.epsilon for r in committed) == snapshot.ledger_map()["diabetes"]
    # L never exceeds B at any prefix of the commit order.
    running = Fraction(0)
    for release in snapshot.releases:
        running += release.epsilon
        assert running <= CAP
    return sum(per_process), per_process, snapshot.ledger_map()["diabetes"]


def _repeat(tmp_path: Path, repetitions: int) -> list[int]:
    totals = []
    for rep in range(repetitions):
        total, per_process, ledger = run_once(tmp_path / f"rep{rep}.db", seed=rep)
        assert total == 3, per_process
        assert ledger == 2
        totals.append(total)
    return totals


def test_eight_processes_admit_exactly_three(tmp_path: Path) -> None:
    assert _repeat(tmp_path, 3) == [3, 3, 3]


@pytest.mark.slow
def test_eight_processes_admit_exactly_three_twenty_times(tmp_path: Path) -> None:
    started = time.perf_counter()
    totals = _repeat(tmp_path, 20)
    print(f"\nconcurrency: admitted totals over 20 repetitions {totals} in {time.perf_counter() - started:.1f} s")
    assert totals == [3] * 20
