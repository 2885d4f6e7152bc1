"""The exact auditor over interfaces with reuse (docs/reuse.md): the same engine walks the
reused releases (a point mass on a released view, no charge), so an interface with reuse is
audited exactly; on the Figure 2 example and on generated interfaces its worst case is the
same or lower than without reuse, within B_a (Theorem 1). Not a theorem in general: reuse
frees budget that another slot may spend, and a constructed case shows the loss rising (still
within B_a); when no attribute is charged by two slots it is never higher (generated cases). `dpmem check` refuses a refresh that reads memory with one line naming C4."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.analysis import worst_case_loss
from dpmem_ref.analysis.witness import WorstCase
from dpmem_ref.cli import main
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.contract import contract_violations
from tests.audit_generators import interface_case

ROOT = Path(__file__).resolve().parents[2]
FIGURE2 = ROOT / "examples" / "figure2.toml"
FIGURE2_REUSE = ROOT / "examples" / "figure2-reuse.toml"
PAIRS = (("M", "M_no_diabetes"), ("M", "M_no_debt"), ("M", "neutral"))


def _no_higher(mine: WorstCase, theirs: WorstCase) -> bool:
    """mine <= theirs in both directions (finite enclosures compared end to end)."""
    for direction in ("a_over_b", "b_over_a"):
        a, b = getattr(mine, direction).value, getattr(theirs, direction).value
        if a.is_impossible or (a.is_finite and b.is_finite and a.upper <= b.upper):
            continue
        if a.is_infinite and b.is_infinite:
            continue
        return False
    return True


@pytest.mark.parametrize(("store_a", "store_b"), PAIRS)
@pytest.mark.parametrize("horizon", [3, 6])
def test_figure2_with_reuse_audits_no_higher_than_without(store_a: str, store_b: str, horizon: int) -> None:
    plain, reuse = load_interface_file(FIGURE2), load_interface_file(FIGURE2_REUSE)
    without = worst_case_loss(plain.interface, plain.store(store_a), plain.store(store_b), horizon)
    with_reuse = worst_case_loss(reuse.interface, reuse.store(store_a), reuse.store(store_b), horizon)
    assert _no_higher(with_reuse, without)


def test_figure2_reuse_lowers_the_short_horizon_loss() -> None:
    """At T = 4 the repeated food selection the adversary wants is re-served instead: 0.366 < 0.667."""
    plain, reuse = load_interface_file(FIGURE2), load_interface_file(FIGURE2_REUSE)
    without = worst_case_loss(plain.interface, plain.store("M"), plain.store("M_no_diabetes"), 4)
    with_reuse = worst_case_loss(reuse.interface, reuse.store("M"), reuse.store("M_no_diabetes"), 4)
    assert with_reuse.a_over_b.value.upper < without.a_over_b.value.lower
    assert "reused" in {slot.release for turn in _witness_rows(reuse, with_reuse) for slot in turn.slots}


def _witness_rows(loaded: Any, case: WorstCase) -> list[Any]:
    from dpmem_ref.audit.record import witness_rows

    return list(witness_rows(loaded.interface, loaded.store("M"), loaded.store("M_no_diabetes"), case.a_over_b.witness))


def _with_reuse(data: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    used = {read["slot"] for query in data["queries"] for read in query["reads"]}
    return {**data, "reuse": [{"slot": slot, "refresh_after": rng.randint(1, 3)} for slot in sorted(used)]}


def _reuse_audits_no_higher(data: dict[str, Any], with_rules: dict[str, Any], a: str, b: str, horizon: int) -> bool:
    """The exact worst case of `with_rules` (the interface with reuse) is no higher than `data`'s."""
    plain, reuse = interface_from_dict(data), interface_from_dict(with_rules)
    without = worst_case_loss(plain.interface, plain.store(a), plain.store(b), horizon)
    with_reuse = worst_case_loss(reuse.interface, reuse.store(a), reuse.store(b), horizon)
    return _no_higher(with_reuse, without)


def test_generated_interfaces_with_reuse_stay_within_the_bound_and_no_higher() -> None:
    audited = 0
    for seed in range(0, 400, 3):
        data, a, b = interface_case(seed)
        if contract_violations(interface_from_dict(data).interface):
            continue
        assert _reuse_audits_no_higher(data, _with_reuse(data, seed), a, b, 2 + seed % 3), seed
        audited += 1
    assert audited >= 30


def _slots_charging(data: dict[str, Any]) -> dict[str, set[str]]:
    """Per attribute, the slots whose reads are charged to it (the declared charge set, or the
    attributes whose groups the read touches when none is declared)."""
    groups = {name: set(spec["group"]) for name, spec in data["attributes"].items()}
    out: dict[str, set[str]] = {name: set() for name in groups}
    for query in data["queries"]:
        for read in query["reads"]:
            touched = [n for n, g in groups.items() if g & set(read["positions"])]
            for name in read.get("charge", touched):
                out[name].add(read["slot"])
    return out


def test_reuse_never_raises_the_loss_when_no_attribute_is_charged_by_two_slots() -> None:
    """The condition under which "reuse audits to the same or lower loss" holds: every
    attribute is charged by reads of one slot only, so a re-served view frees budget that no
    other slot can spend, and the reusing slot's fresh selections are a subset in number of
    those without reuse. Any subset of slots reuses, refresh_after 1..4, T = 2..5."""
    audited = 0
    for seed in range(2, 1200, 5):
        data, a, b = interface_case(seed)
        if any(len(slots) > 1 for slots in _slots_charging(data).values()):
            continue
        if contract_violations(interface_from_dict(data).interface):
            continue
        rng = random.Random(seed)
        used = sorted({read["slot"] for query in data["queries"] for read in query["reads"]})
        reusing = rng.sample(used, rng.randint(1, len(used)))
        rules = {**data, "reuse": [{"slot": s, "refresh_after": rng.randint(1, 4)} for s in sorted(reusing)]}
        assert _reuse_audits_no_higher(data, rules, a, b, 2 + seed % 4), seed
        audited += 1
    assert audited >= 40


def test_two_slots_charging_one_attribute_is_where_reuse_can_raise_the_loss() -> None:
    """The constructed case below breaks exactly that condition (slots x and y both charge a)."""
    assert _slots_charging(_freed_budget_case()) == {"a": {"x", "y"}}


def _freed_budget_case() -> dict[str, Any]:
    """Slot x reads a position equal in both stores, slot y the differing one; both are
    charged to a (eps = 1, cap 4). Without reuse each turn charges 2: y is selected twice
    in 3 turns. Re-serving x frees its charge: y is selected three times."""
    views = {"compatible": ["t"]}
    return {
        "positions": ["x", "y"],
        "attributes": {"a": {"group": [1, 2], "cap": 4}},
        "budget": {"rule": "online", "K": 4},
        "scorer": {"kind": "linear", "weights": {"r": "2/5", "c": "2/5", "s": "1/5"}, "sensitivity": "3/5"},
        "slots": {
            "x": {"generic": "x-g", "views": {"x-g": {}, "x-t": views}},
            "y": {"generic": "y-g", "views": {"y-g": {}, "y-t": views}},
        },
        "queries": [{"name": "q", "reads": [{"slot": "x", "positions": [1]}, {"slot": "y", "positions": [2]}]}],
        "stores": {"A": {"1": {"tags": ["t"]}, "2": {"tags": ["t"]}}, "B": {"1": {"tags": ["t"]}}},
    }


def test_reuse_can_free_budget_for_another_slot_but_never_past_the_cap() -> None:
    """The honest twin: reuse is post-processing, so Theorem 1 (loss <= B_a) holds, but the
    worst case may rise towards B_a when re-serving one slot leaves budget to another."""
    data = _freed_budget_case()
    plain = interface_from_dict(data)
    reuse = interface_from_dict({**data, "reuse": [{"slot": "x", "refresh_after": 10}]})
    without = worst_case_loss(plain.interface, plain.store("A"), plain.store("B"), 3)
    with_reuse = worst_case_loss(reuse.interface, reuse.store("A"), reuse.store("B"), 3)
    assert with_reuse.a_over_b.value.lower > without.a_over_b.value.upper
    assert with_reuse.a_over_b.value.within(plain.interface.caps["a"])


def _figure2_data() -> dict[str, Any]:
    with FIGURE2_REUSE.open("rb") as handle:
        return tomllib.load(handle)


def test_dpmem_check_refuses_a_memory_triggered_refresh_in_one_c4_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = FIGURE2_REUSE.read_text()
    broken = tmp_path / "reuse-memory.toml"
    broken.write_text(text.replace('slot = "food"\nqueries', 'slot = "food"\nmemory_change = true\nqueries'))
    code = main(["check", str(broken)])
    out = capsys.readouterr()
    assert code != 0
    lines = [line for line in (out.out + out.err).splitlines() if "C4" in line]
    assert len(lines) == 1 and "reuse rule of slot food: refresh on a memory change reads memory" in lines[0]
    assert "metformin" not in out.out + out.err  # no memory text echoed


def test_dpmem_check_accepts_the_reuse_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FIGURE2_REUSE)]) == 0


def test_audit_of_a_memory_triggered_refresh_finds_the_leak() -> None:
    """Lenient audit of the breach: whether the food slot re-serves depends on the store,
    so the control tells the stores apart: an infinite worst case."""
    data = _figure2_data()
    data["reuse"] = [{"slot": "food", "queries": ["affordable-dinner"], "refresh_after": 4, "memory_change": True}]
    loaded = interface_from_dict(data)
    # neutral holds no evidence under the food slot, M does: only one of them re-serves.
    case = worst_case_loss(loaded.interface, loaded.store("M"), loaded.store("neutral"), 3, strict=False)
    assert case.worst.value.is_infinite


# ---------------------------------------------------------------- the memo against brute force


def _brute_force(interface: Any, store_a: Any, store_b: Any, horizon: int) -> tuple[Any, Any]:
    """The worst case over every query sequence and every released view, without a memo:
    what the general search computes, walked naively (both directions)."""
    from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, ZERO
    from dpmem_ref.analysis.steps import StepTable
    from dpmem_ref.turn.planner import begin_turn
    from dpmem_ref.turn.state import InterfaceState

    steps = StepTable()

    def turn(state_a: InterfaceState, state_b: InterfaceState) -> tuple[Any, Any]:
        if state_a.turn == horizon:
            return ZERO, ZERO
        best = (IMPOSSIBLE, IMPOSSIBLE)
        for query in interface.queries:
            found = slot(begin_turn(interface, state_a, query, store_a), begin_turn(interface, state_b, query, store_b))
            best = (best[0].join(found[0]), best[1].join(found[1]))
        return best

    def slot(cursor_a: Any, cursor_b: Any) -> tuple[Any, Any]:
        if cursor_a.done:
            if cursor_a.control() != cursor_b.control():
                return INFINITE, INFINITE
            next_a, _ = cursor_a.finish()
            return turn(next_a, InterfaceState(turn=next_a.turn, ledgers=cursor_b.ledgers, history=next_a.history))
        best = (IMPOSSIBLE, IMPOSSIBLE)
        for view, ab, ba in steps.steps(cursor_a.plan(), cursor_b.plan()):
            rest = slot(cursor_a.release(view), cursor_b.release(view))
            best = (best[0].join(ab.add(rest[0])), best[1].join(ba.add(rest[1])))
        return best

    start = InterfaceState.initial(interface)
    return turn(start, start)


@pytest.mark.parametrize(
    ("store_b", "horizon", "refresh_after"),
    [("M_no_diabetes", 4, 1), ("M_no_diabetes", 4, 2), ("M_no_debt", 4, 2), ("neutral", 5, 2)],
)
def test_reuse_audit_equals_the_unmemoized_search(store_b: str, horizon: int, refresh_after: int) -> None:
    """The general search memoizes on (turn, ledgers, the reuse rules' state, ...): a memo
    key that forgot the reuse state, or shared one continuation across released views,
    would merge states whose futures differ (the age of a stored view matters at M vs
    neutral, T = 5: a key without it is 0.034 short)."""
    data = _figure2_data()
    for entry in data["reuse"]:
        entry["refresh_after"] = refresh_after
        entry["reuse_when_exhausted"] = False
    loaded = interface_from_dict(data)
    store_a = "M"
    case = worst_case_loss(loaded.interface, loaded.store(store_a), loaded.store(store_b), horizon)
    ab, ba = _brute_force(loaded.interface, loaded.store(store_a), loaded.store(store_b), horizon)
    for mine, theirs in ((case.a_over_b.value, ab), (case.b_over_a.value, ba)):
        assert mine.kind == theirs.kind
        assert abs(mine.midpoint - theirs.midpoint) <= 1e-30


@pytest.mark.parametrize("store_b", ["M_no_diabetes", "M_no_debt", "neutral"])
def test_witness_re_serves_the_view_it_released(store_b: str) -> None:
    """In the audit's witness (a real transcript), every reused slot shows the view its
    latest fresh release showed: the search follows each released view into the future."""
    from dpmem_ref.audit.record import witness_rows

    loaded = load_interface_file(FIGURE2_REUSE)
    case = worst_case_loss(loaded.interface, loaded.store("M"), loaded.store(store_b), 8)
    reused = 0
    for direction in (case.a_over_b, case.b_over_a):
        rows = witness_rows(loaded.interface, loaded.store("M"), loaded.store(store_b), direction.witness)
        latest: dict[str, str] = {}
        for row in rows:
            for slot in row.slots:
                if slot.release == "reused":
                    assert slot.view == latest[slot.slot], (row.turn, slot.slot)
                    reused += 1
                elif slot.release in ("em", "deterministic"):
                    latest[slot.slot] = slot.view
    assert reused > 0


def _charged_in_witness(loaded: Any, store_b: str, case: WorstCase) -> int:
    """Charged selections along the worst-case witness (the larger of the two directions)."""
    from dpmem_ref.audit.record import witness_rows

    counts = []
    for direction in (case.a_over_b, case.b_over_a):
        rows = witness_rows(loaded.interface, loaded.store("M"), loaded.store(store_b), direction.witness)
        counts.append(sum(1 for r in rows for s in r.slots if s.release in ("em", "deterministic") and s.charged))
    return max(counts)


@pytest.mark.parametrize("store_b", ["M_no_debt", "neutral"])
def test_figure2_reuse_worst_case_uses_fewer_charged_selections(store_b: str) -> None:
    """At T = 8 the worst case with reuse is lower (M_no_debt 2.38 against 3.28, neutral 2.82
    against 3.84) and its witness spends fewer charged selections (4-5 against 6)."""
    plain, reuse = load_interface_file(FIGURE2), load_interface_file(FIGURE2_REUSE)
    without = worst_case_loss(plain.interface, plain.store("M"), plain.store(store_b), 8)
    with_reuse = worst_case_loss(reuse.interface, reuse.store("M"), reuse.store(store_b), 8)
    assert with_reuse.worst.value.upper < without.worst.value.lower
    assert _charged_in_witness(reuse, store_b, with_reuse) < _charged_in_witness(plain, store_b, without)
