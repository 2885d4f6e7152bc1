"""DurableSession: Algorithm 1 over a LedgerStore, charge-before-release, restartable."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.policy import Layout, Store
from dpmem_ref.ledger import LedgerStore, MemoryLedgerStore, SlotRelease, SQLiteLedgerStore
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn import TemplateChannel, durable, run_interaction
from dpmem_ref.turn.durable import DurableSession

ROOT = Path(__file__).resolve().parents[2]
FIGURE2 = ROOT / "examples" / "figure2.toml"
QUERIES = ["affordable-dinner", "checkup-reminder", "weeknight-plan", "affordable-dinner"] * 3


def make_store(kind: str, tmp_path: Path) -> LedgerStore:
    return MemoryLedgerStore() if kind == "memory" else SQLiteLedgerStore(tmp_path / "l.db")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_matches_the_in_memory_kernel(kind: str, seed: int, tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    reference = run_interaction(
        loaded.interface, QUERIES, loaded.store("M"), SeededRandomSource(seed), channel=TemplateChannel()
    )
    session = DurableSession.open(
        loaded.interface,
        make_store(kind, tmp_path),
        "user",
        "interaction",
        loaded.store("M"),
        SeededRandomSource(seed),
        channel=TemplateChannel(),
    )
    for query in QUERIES:
        session.run_turn(query)
    assert session.state() == reference


@pytest.mark.parametrize("seed", [0, 7])
def test_a_turn_on_the_callers_loaded_snapshot_matches_the_kernel(seed: int) -> None:
    """`run_turn(query, loaded)` plans on the snapshot the caller just loaded (one load per
    turn): the same turns as the in-memory kernel; anything but a snapshot is refused."""
    loaded = load_interface_file(FIGURE2)
    reference = run_interaction(loaded.interface, QUERIES, loaded.store("M"), SeededRandomSource(seed))
    session = DurableSession.open(
        loaded.interface, MemoryLedgerStore(), "u", "i", loaded.store("M"), SeededRandomSource(seed), turn_deadline_s=None
    )
    for query in QUERIES:
        session.run_turn(query, session.ledgers.load())
    assert session.state() == reference
    with pytest.raises(InputError, match="^loaded:"):
        session.run_turn(QUERIES[0], session.state())  # type: ignore[arg-type]


def test_restart_in_a_new_process_continues_ledgers_and_history(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    loaded = load_interface_file(FIGURE2)
    first = DurableSession.open(
        loaded.interface, SQLiteLedgerStore(path), "u", "i", loaded.store("M"), SeededRandomSource(3)
    )
    first.run_turn("affordable-dinner")
    before = first.state()
    script = (
        "import json, sys\n"
        "from dpmem_ref.config.load import load_interface_file\n"
        "from dpmem_ref.turn.durable import DurableSession\n"
        "from dpmem_ref.ledger import SQLiteLedgerStore\n"
        "from dpmem_ref.mechanism.randomness import SeededRandomSource\n"
        "f = load_interface_file(sys.argv[1])\n"
        "s = DurableSession.open(f.interface, SQLiteLedgerStore(sys.argv[2]), 'u', 'i', f.store('M'), SeededRandomSource(4))\n"
        "start = s.state()\n"
        "s.run_turn('affordable-dinner')\n"
        "end = s.state()\n"
        "print(json.dumps({'start_turn': start.turn, 'start': [str(x) for x in start.ledgers],\n"
        "                  'end_turn': end.turn, 'end': [str(x) for x in end.ledgers]}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(FIGURE2), str(path)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    child = json.loads(result.stdout)
    assert child["start_turn"] == 1 and child["start"] == [str(x) for x in before.ledgers]
    assert child["end_turn"] == 2
    after = DurableSession.open(
        loaded.interface, SQLiteLedgerStore(path), "u", "i", loaded.store("M"), SeededRandomSource(5)
    ).state()
    assert after.turn == 2 and after.history[0] == before.history[0]
    assert [str(x) for x in after.ledgers] == child["end"]
    # Turn 1 charges food to {diabetes, debt} and finance to {debt}; turn 2 the food slot only.
    assert after.ledgers == (Fraction(4, 3), Fraction(20, 3))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_budget_spent_elsewhere_meanwhile_turns_the_release_into_the_fallback(kind: str, tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = make_store(kind, tmp_path)
    other = DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(1))
    fired: list[bool] = []

    def spend_elsewhere(point: str) -> None:
        # Between this process's plan (admitted, from the ledgers it read) and its charge,
        # another process spends the whole diabetes budget.
        if point == "slot:before-charge" and not fired:
            fired.append(True)
            for _ in range(3):
                other.run_turn("checkup-reminder")

    session = DurableSession.open(
        loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(2), checkpoint=spend_elsewhere
    )
    turn = session.run_turn("checkup-reminder")
    assert turn.record.views == (("health", "health-generic"),)
    assert turn.record.admitted == (False,) and turn.record.control == (("health", "fallback"),)
    assert not turn.plans[0].admitted
    state = session.state()
    assert state.ledger_map(loaded.interface)["diabetes"] == 2
    assert state.turn == 4


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_views_are_released_only_after_their_charge_committed(kind: str, tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = make_store(kind, tmp_path)
    observer = (
        ledger_store
        if isinstance(ledger_store, MemoryLedgerStore)
        else SQLiteLedgerStore(tmp_path / "l.db")  # a separate connection sees only committed state
    )
    watcher = observer.open_session("u", "i", loaded.interface.caps)
    points: list[str] = []

    def on_release(release: SlotRelease) -> None:
        committed = {r.release_id: r for r in watcher.load().releases}
        assert committed[release.release_id] == release
        ledgers = watcher.load().ledger_map()
        for attribute in release.charge_set:
            assert ledgers[attribute] >= release.epsilon > 0
        points.append("release")

    session = DurableSession.open(
        loaded.interface,
        ledger_store,
        "u",
        "i",
        loaded.store("M"),
        SeededRandomSource(0),
        checkpoint=points.append,
        on_release=on_release,
    )
    session.run_turn("affordable-dinner")
    # Releases are observable only at the turn's deadline (timing side channel): after every
    # charge has committed and the turn is recorded.
    assert points == [
        "turn:start",
        "slot:before-charge",
        "slot:before-release",
        "slot:released",
        "slot:before-charge",
        "slot:before-release",
        "slot:released",
        "turn:before-record",
        "turn:recorded",
        "release",
        "release",
    ]


def test_contract_breaking_interfaces_are_refused(tmp_path: Path) -> None:
    text = FIGURE2.read_text().replace("enforce_cap = true", "enforce_cap = false")
    import tomllib

    loaded = interface_from_dict(tomllib.loads(text))
    with pytest.raises(ContractViolation, match="^C5: "):
        DurableSession.open(loaded.interface, MemoryLedgerStore(), "u", "i", loaded.store("M"), SeededRandomSource(0))


def test_bad_arguments_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = MemoryLedgerStore()
    other_layout = Store.from_mapping(Layout(position_slots=("food",)), {})
    with pytest.raises(InputError, match="^memory: "):
        DurableSession.open(loaded.interface, ledger_store, "u", "i", other_layout, SeededRandomSource(0))
    with pytest.raises(InputError, match="^source: "):
        DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), object())  # type: ignore[arg-type]
    with pytest.raises(InputError, match="^interface: "):
        DurableSession.open(object(), ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(0))  # type: ignore[arg-type]
    session = DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(0))
    with pytest.raises(InputError, match="^query: "):
        session.run_turn("no-such-query")
    monkeypatch.setattr(durable, "MAX_TURNS_PER_INTERACTION", 2)
    session.run_turn("weeknight-plan")
    session.run_turn("weeknight-plan")
    with pytest.raises(InputError, match="^turn: expected at most 2 turns"):
        session.run_turn("weeknight-plan")


def test_repr_hides_memory() -> None:
    loaded = load_interface_file(FIGURE2)
    session = DurableSession.open(
        loaded.interface, MemoryLedgerStore(), "u", "i", loaded.store("M"), SeededRandomSource(0)
    )
    turn = session.run_turn("affordable-dinner")
    for text in (repr(session), repr(turn), repr(session.ledgers)):
        assert "metformin" not in text and "blood-sugar" not in text


def test_turn_deadline_releases_at_a_fixed_time() -> None:
    import time

    loaded = load_interface_file(FIGURE2)
    session = DurableSession.open(
        loaded.interface,
        MemoryLedgerStore(),
        "u",
        "i",
        loaded.store("M"),
        SeededRandomSource(0),
        turn_deadline_s=0.02,
    )
    for query in ["affordable-dinner", "weeknight-plan"]:
        started = time.perf_counter()
        turn = session.run_turn(query)
        assert time.perf_counter() - started >= 0.02
        assert not turn.overran or time.perf_counter() - started > 0.02


@pytest.mark.parametrize("deadline", [0, -1.0, float("nan"), float("inf"), 11, True])
def test_bad_turn_deadlines_are_refused(deadline: object) -> None:
    loaded = load_interface_file(FIGURE2)
    with pytest.raises(InputError, match="^turn_deadline_s: "):
        DurableSession.open(
            loaded.interface,
            MemoryLedgerStore(),
            "u",
            "i",
            loaded.store("M"),
            SeededRandomSource(0),
            turn_deadline_s=deadline,  # type: ignore[arg-type]
        )


def test_dpmem_run_store_url_continues_one_durable_ledger(tmp_path: Path) -> None:
    database = tmp_path / "ledgers.db"
    queries = ROOT / "examples" / "figure2-queries.txt"

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dpmem_ref.cli", "run", str(FIGURE2), "--store", "M", "--queries", str(queries),
             "--seed", "0", "--json", *extra],
            capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DPMEM_LEDGER_DEV_KEY": "1"}, timeout=120,
        )  # fmt: skip

    first = run("--store-url", f"sqlite:///{database}")
    second = run("--store-url", f"sqlite:///{database}")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    turns_first = json.loads(first.stdout)["turns"]
    turns_second = json.loads(second.stdout)["turns"]
    assert turns_second[0]["turn"] == turns_first[-1]["turn"] + 1  # the same interaction, resumed
    for turn_a, turn_b in zip(turns_first, turns_second, strict=True):  # ledgers only grow
        assert all(Fraction(turn_b["ledgers"][a]) >= Fraction(turn_a["ledgers"][a]) for a in turn_a["ledgers"])
    in_memory = run()
    assert json.loads(in_memory.stdout)["turns"] == turns_first  # same kernel, same draws
    for bad in ("ftp://host/x", "sqlite:relative.db", ""):
        refused = run("--store-url", bad)
        assert refused.returncode == 2 and refused.stdout == "" and refused.stderr.count("\n") == 1
