"""The durable session drives the kernel's turn planner: after every slot the cursor
continues from the ledgers the store committed (which include other processes' charges),
not from the plan's own arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.ledger import MemoryLedgerStore, SQLiteLedgerStore
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

FIGURE2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_turn_state_carries_the_committed_ledgers_after_a_concurrent_charge(kind: str, tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = MemoryLedgerStore() if kind == "memory" else SQLiteLedgerStore(tmp_path / "l.db")
    other = DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(1))
    fired: list[bool] = []

    def charge_elsewhere(point: str) -> None:
        # After this process planned its slot from the ledgers it read, another process
        # charges the same attribute once (the budget still admits this process's charge).
        if point == "slot:before-charge" and not fired:
            fired.append(True)
            other.run_turn("checkup-reminder")

    session = DurableSession.open(
        loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(2), checkpoint=charge_elsewhere
    )
    turn = session.run_turn("checkup-reminder")
    assert turn.record.admitted == (True,)
    committed = session.state().ledger_map(loaded.interface)
    assert turn.state.ledger_map(loaded.interface) == committed
    assert committed["diabetes"] == 2 * turn.plans[0].epsilon
