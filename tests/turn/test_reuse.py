"""Reuse of released views (dpmem_ref.parts.reuse): a re-served view is free, reads nothing,
is recorded as reused, refreshes by its public rule, and is refused (C4) when its refresh
reads memory; its configuration errors are one exact line each."""

from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import pytest

from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.contract import contract_violations
from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import PublicPrefix, Query, SlotRead, TurnRecord
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.em import PointMass
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.broken import PrivateHooks
from dpmem_ref.parts.reuse import ReusePolicy, ReuseRule
from dpmem_ref.turn.plan import plan_slot
from dpmem_ref.turn.planner import begin_turn
from dpmem_ref.turn.runner import TurnResult, run_turn
from dpmem_ref.turn.state import InterfaceState
from tests.kernel_fixtures import XYZW_STORE, interface_reading_1, interface_reading_1_3, item, make_store

ROOT = Path(__file__).resolve().parents[2]
FIGURE2 = ROOT / "examples" / "figure2.toml"
FIGURE2_REUSE = ROOT / "examples" / "figure2-reuse.toml"


def _run(interface: Interface, store: Store, queries: list[str], seed: int = 7) -> list[TurnResult]:
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(seed)
    results = []
    for query in queries:
        result = run_turn(interface, state, query, store, source)
        results.append(result)
        state = result.state
    return results


def _with_rules(interface: Interface, *rules: ReuseRule) -> Interface:
    return Interface(
        policy=interface.policy,
        vocabularies=interface.vocabularies,
        queries=interface.queries,
        scorer=interface.scorer,
        budget=interface.budget,
        control=interface.control,
        name=interface.name,
        reuse=ReusePolicy(rules),
    )


def _food_rule(**changes: Any) -> ReuseRule:
    spec: dict[str, Any] = {"slot": "food", "queries": frozenset({"affordable-dinner"}), "refresh_after": 3}
    spec.update(changes)
    return ReuseRule(**spec)


def test_reused_view_is_the_latest_fresh_one_free_and_recorded() -> None:
    loaded = load_interface_file(FIGURE2)
    interface = _with_rules(loaded.interface, _food_rule())
    turns = _run(interface, loaded.store("M"), ["affordable-dinner"] * 3)
    first, second, third = turns
    assert dict(first.kinds) == {"food": "fresh", "finance": "fresh"}
    assert dict(second.kinds) == {"food": "reused", "finance": "fresh"}
    assert dict(second.record.views)["food"] == dict(first.record.views)["food"]
    assert dict(third.record.views)["food"] == dict(first.record.views)["food"]
    # The control and the turn record say it; the charge is the finance slot's alone.
    assert dict(second.record.control)["food"] == "reused"  # type: ignore[arg-type]
    assert second.record.charges[0] == ("food", frozenset(), Fraction(0))
    diabetes = interface.policy.attribute_names.index("diabetes")
    assert second.state.ledgers[diabetes] == first.state.ledgers[diabetes] == Fraction(2, 3)


def test_reused_plan_reads_nothing_and_is_the_same_under_every_store() -> None:
    loaded = load_interface_file(FIGURE2)
    interface = _with_rules(loaded.interface, _food_rule())
    history = _run(interface, loaded.store("M"), ["affordable-dinner"])[0].state
    plans = []
    for name in ("M", "M_no_diabetes", "neutral"):
        cursor_state = history
        plan = begin_turn(interface, cursor_state, "affordable-dinner", loaded.store(name)).plan()
        assert plan.reused and not plan.admitted
        assert plan.items == () and plan.scores is None and plan.charge_set == frozenset()
        assert plan.ledgers_after == cursor_state.ledgers
        plans.append((plan.public_shape, plan.distribution))
    assert plans[0] == plans[1] == plans[2]


def test_refresh_after_n_turns_selects_afresh() -> None:
    loaded = load_interface_file(FIGURE2)
    interface = _with_rules(loaded.interface, _food_rule(refresh_after=2))
    turns = _run(interface, loaded.store("M"), ["affordable-dinner"] * 4)
    assert [dict(t.kinds)["food"] for t in turns] == ["fresh", "reused", "reused", "fresh"]


def test_turns_of_other_queries_count_toward_the_refresh() -> None:
    loaded = load_interface_file(FIGURE2)
    interface = _with_rules(loaded.interface, _food_rule(refresh_after=2))
    turns = _run(
        interface, loaded.store("M"), ["affordable-dinner", "weeknight-plan", "weeknight-plan"] + ["affordable-dinner"]
    )
    assert dict(turns[-1].kinds)["food"] == "fresh"


def test_public_refresh_event_makes_the_stored_view_stale() -> None:
    loaded = load_interface_file(FIGURE2)
    rule = _food_rule(refresh_after=10, refresh_on=frozenset({"weeknight-plan"}))
    interface = _with_rules(loaded.interface, rule)
    turns = _run(
        interface, loaded.store("M"), ["affordable-dinner", "affordable-dinner", "weeknight-plan", "affordable-dinner"]
    )
    assert [dict(t.kinds).get("food") for t in turns] == ["fresh", "reused", None, "fresh"]


@pytest.mark.parametrize(("when_exhausted", "expected"), [(True, "reused"), (False, "fallback")])
def test_exhausted_refresh_serves_the_stored_view_or_the_generic_one(when_exhausted: bool, expected: str) -> None:
    loaded = load_interface_file(FIGURE2)
    rule = _food_rule(refresh_after=1, reuse_when_exhausted=when_exhausted)
    interface = _with_rules(loaded.interface, rule)
    # diabetes cap 2 at eps 2/3: fresh food selections at turns 1, 3, 5; turn 7 is refused.
    turns = _run(interface, loaded.store("M"), ["affordable-dinner"] * 8)
    kinds = [dict(t.kinds)["food"] for t in turns]
    assert kinds[:6] == ["fresh", "reused"] * 3
    assert kinds[6] == expected
    if when_exhausted:
        assert dict(turns[6].record.views)["food"] == dict(turns[4].record.views)["food"]
    else:
        assert dict(turns[6].record.views)["food"] == "balanced-meals"
    assert turns[-1].state.ledgers[0] == Fraction(2)  # never past the cap (C5)


def _charged(turns: list[TurnResult]) -> int:
    """Admitted selections with a non-empty charge set."""
    return sum(
        bool(charge)
        for t in turns
        for (_, charge, _), ok in zip(t.record.charges, t.record.admitted, strict=True)
        if ok
    )


def _personalised(turns: list[TurnResult], interface: Interface) -> int:
    """Turns that released at least one non-generic view."""
    generic = {v.slot: v.generic for v in interface.vocabularies}
    return sum(any(view != generic[slot] for slot, view in t.record.views) for t in turns)


def test_reuse_needs_fewer_charged_selections_for_the_same_turns() -> None:
    plain = load_interface_file(FIGURE2)
    reuse = load_interface_file(FIGURE2_REUSE)
    queries = ["affordable-dinner"] * 5
    without = _run(plain.interface, plain.store("M"), queries)
    with_reuse = _run(reuse.interface, reuse.store("M"), queries)
    assert (_charged(with_reuse), _charged(without)) == (2, 5)  # food 1 + finance 1, vs food 3 + finance 2
    assert _personalised(with_reuse, reuse.interface) >= _personalised(without, plain.interface)


def test_reuse_keeps_personalising_after_the_budget_is_spent() -> None:
    plain = load_interface_file(FIGURE2)
    reuse = load_interface_file(FIGURE2_REUSE)
    queries = ["affordable-dinner", "checkup-reminder", "weeknight-plan"] * 8
    without = _run(plain.interface, plain.store("M"), queries)
    with_reuse = _run(reuse.interface, reuse.store("M"), queries)
    assert _charged(with_reuse) <= _charged(without)
    assert _personalised(with_reuse, reuse.interface) > _personalised(without, plain.interface)


def test_refresh_on_memory_change_is_refused_as_c4() -> None:
    loaded = load_interface_file(FIGURE2)
    rule = _food_rule(memory_change=True)
    interface = _with_rules(loaded.interface, rule)
    codes = [v.code for v in contract_violations(interface)]
    assert codes == ["C4.reuse_reads_memory"]
    with pytest.raises(ContractViolation) as caught:
        _run(interface, loaded.store("M"), ["affordable-dinner"])
    assert caught.value.code == "C4.reuse_reads_memory"


def test_memory_change_declared_as_a_public_event_is_accepted() -> None:
    loaded = load_interface_file(FIGURE2)
    rule = _food_rule(memory_change=True, memory_change_public=True, refresh_on=frozenset({"weeknight-plan"}))
    interface = _with_rules(loaded.interface, rule)
    assert contract_violations(interface) == []
    turns = _run(interface, loaded.store("M"), ["affordable-dinner", "affordable-dinner"])
    assert dict(turns[1].kinds)["food"] == "reused"


def test_lenient_memory_refresh_reuses_for_one_store_and_not_the_other() -> None:
    """The breach as deployed: whether the food slot re-serves depends on the store."""
    loaded = load_interface_file(FIGURE2)
    interface = _with_rules(loaded.interface, _food_rule(memory_change=True))
    state = InterfaceState.initial(interface)
    first = run_turn(interface, state, "affordable-dinner", loaded.store("M"), SeededRandomSource(1), strict=False)
    kinds = {}
    for name in ("M", "neutral"):
        plan = begin_turn(interface, first.state, "affordable-dinner", loaded.store(name), strict=False).plan()
        kinds[name] = plan.reused
    assert kinds == {"M": False, "neutral": True}


def test_plan_slot_outside_a_turn_reuses_from_the_prefix_history() -> None:
    loaded = load_interface_file(FIGURE2)
    interface = _with_rules(loaded.interface, _food_rule())
    state = _run(interface, loaded.store("M"), ["affordable-dinner"])[0].state
    prefix = PublicPrefix(state.history, interface.query("affordable-dinner"), ())
    plan = plan_slot(interface, state.ledgers, prefix, "food", loaded.store("neutral"))
    assert plan.reused and plan.distribution.support() == (dict(state.history[0].views)["food"],)


# ---------------------------------------------------------------- the re-served plan


def _fresh_g_turn() -> TurnRecord:
    """One earlier turn of query q that released g.v1 for slot g, admitted (a fresh view)."""
    return TurnRecord("q", (("g", "g.v1"),), None, "", (True,), (("g", frozenset({"a", "b"}), Fraction(1, 2)),))


def _g_rule(**changes: Any) -> ReuseRule:
    spec: dict[str, Any] = {"slot": "g", "queries": frozenset({"q"}), "refresh_after": 3}
    spec.update(changes)
    return ReuseRule(**spec)


class _PrefixReadRouter:
    """A public router (C4) whose read of slot g follows the whole prefix: {1, 3} at the
    empty prefix; a completed turn drops position 3; a view released earlier this turn adds
    position 2."""

    name = "prefix-read"
    violates = None
    reads_history = True
    reads_released_views = True

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        return tuple(read.slot for read in query.reads)

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        positions = {1} if prefix.history else {1, 3}
        if prefix.released:
            positions.add(2)
        return attrs.evolve(prefix.query.read_for(slot), positions=frozenset(positions))

    def state_key(self, history: tuple[TurnRecord, ...]) -> Any:
        return len(history)


def test_re_served_plan_is_a_point_mass_over_the_vocabulary_at_no_charge() -> None:
    interface = attrs.evolve(interface_reading_1_3(), reuse=ReusePolicy((_g_rule(),)))
    query = interface.query("q")
    ledgers = (Fraction(1, 2), Fraction(1, 2))
    plan = plan_slot(interface, ledgers, PublicPrefix((_fresh_g_turn(),), query, ()), "g", XYZW_STORE)
    assert plan.reused and not plan.admitted
    assert plan.read == query.read_for("g")  # what the router reads at the prefix, not nothing
    assert plan.distribution == PointMass(views=("g.gen", "g.v1"), view="g.v1")
    assert plan.vocabulary == interface.vocabulary("g")
    assert (plan.charge_set, plan.epsilon) == (frozenset(), Fraction(0))
    assert type(plan.epsilon) is Fraction and plan.public_shape[2] == 0
    assert plan.ledgers_after == ledgers


def test_re_served_plan_reads_what_the_router_reads_at_the_whole_prefix() -> None:
    """The read recorded in a re-served plan is the router's at h_{t,j} = (history, q_t,
    views released earlier this turn): each part of the prefix moves it."""
    interface = attrs.evolve(interface_reading_1_3(_PrefixReadRouter()), reuse=ReusePolicy((_g_rule(),)))
    query = interface.query("q")
    history = (_fresh_g_turn(),)
    ledgers = (Fraction(1, 2), Fraction(1, 2))
    reads = {}
    for name, released in (("history", ()), ("history and a release", (("h", "h.v1"),))):
        plan = plan_slot(interface, ledgers, PublicPrefix(history, query, released), "g", XYZW_STORE)
        assert plan.reused
        reads[name] = plan.read.positions
    assert reads == {"history": frozenset({1}), "history and a release": frozenset({1, 2})}


def test_strict_plan_refuses_a_reuse_rule_that_refreshes_on_memory() -> None:
    """plan_slot does not run the contract check: the re-serve itself refuses the C4 breach
    when strict, whatever the store holds."""
    interface = attrs.evolve(interface_reading_1(), reuse=ReusePolicy((_g_rule(memory_change=True),)))
    prefix = PublicPrefix((_fresh_g_turn(),), interface.query("q"), ())
    for store in (XYZW_STORE, make_store(p1=item())):
        with pytest.raises(ContractViolation) as caught:
            plan_slot(interface, (Fraction(1, 2), Fraction(0)), prefix, "g", store)
        assert caught.value.code == "C4.reuse_reads_memory"


def test_lenient_memory_refresh_looks_at_the_read_items_only() -> None:
    """As deployed (strict=False), the memory-reading rule refreshes when an item of the read
    set (position 1 here) holds evidence, whatever the other positions hold."""
    interface = attrs.evolve(interface_reading_1(), reuse=ReusePolicy((_g_rule(memory_change=True),)))
    prefix = PublicPrefix((_fresh_g_turn(),), interface.query("q"), ())
    ledgers = (Fraction(1, 2), Fraction(0))
    evidence_at_read = make_store(p1=item("x"), p2=item(), p3=item(), p4=item())
    evidence_elsewhere = make_store(p1=item(), p2=item("y"), p3=item("z"), p4=item("w"))
    reused = {
        name: plan_slot(interface, ledgers, prefix, "g", store, strict=False).reused
        for name, store in (("at the read", evidence_at_read), ("elsewhere", evidence_elsewhere))
    }
    assert reused == {"at the read": False, "elsewhere": True}


def test_re_served_plan_takes_the_vocabulary_hook_with_the_slot_and_the_store() -> None:
    """A store-dependent vocabulary hook (a C1 breach, strict=False) sets the re-served
    plan's vocabulary and the views of its point mass."""
    small = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    large = Vocabulary("g", (View("g.gen"), View("g.v1"), View("g.v2")), "g.gen")
    asked: list[tuple[str, Store]] = []

    def vocabulary(slot: str, store: Store) -> Vocabulary:
        asked.append((slot, store))
        return large if "x" in store.items[0].tags else small

    interface = attrs.evolve(
        interface_reading_1(), reuse=ReusePolicy((_g_rule(),)), hooks=PrivateHooks(vocabulary=vocabulary)
    )
    prefix = PublicPrefix((_fresh_g_turn(),), interface.query("q"), ())
    other = make_store(p1=item("v"))
    stores = (XYZW_STORE, other)
    plans = [plan_slot(interface, (Fraction(1, 2), Fraction(0)), prefix, "g", s, strict=False) for s in stores]
    assert [plan.reused for plan in plans] == [True, True]
    assert [plan.vocabulary for plan in plans] == [large, small]
    assert [plan.distribution for plan in plans] == [
        PointMass(views=("g.gen", "g.v1", "g.v2"), view="g.v1"),
        PointMass(views=("g.gen", "g.v1"), view="g.v1"),
    ]
    assert asked == [("g", XYZW_STORE), ("g", other)]


# ---------------------------------------------------------------- configuration errors

BASE_REUSE = {"slot": "food", "refresh_after": 2}


def _figure2_data() -> dict[str, Any]:
    with FIGURE2.open("rb") as handle:
        return tomllib.load(handle)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"slot": "food"},
            "reuse.food.refresh_after: expected a number of turns a released view serves, found nothing",
        ),
        (
            {**BASE_REUSE, "refresh_after": 0},
            "reuse.food.refresh_after: expected an integer number of turns in 1..1000000, found 0",
        ),
        (
            {**BASE_REUSE, "refresh_after": True},
            "reuse.food.refresh_after: expected an integer number of turns in 1..1000000, found True",
        ),
        (
            {**BASE_REUSE, "queries": ["nope"]},
            "reuse.food.queries: expected queries of the catalogue ['affordable-dinner', 'checkup-reminder', "
            "'weeknight-plan'], found 'nope'",
        ),
        (
            {**BASE_REUSE, "queries": ["weeknight-plan"]},
            "reuse.food.queries: expected queries that read slot food, found 'weeknight-plan'",
        ),
        (
            {**BASE_REUSE, "refresh_on": ["later"]},
            "reuse.food.refresh_on: expected queries of the catalogue ['affordable-dinner', 'checkup-reminder', "
            "'weeknight-plan'], found 'later'",
        ),
        (
            {**BASE_REUSE, "slot": "nowhere"},
            "reuse.nowhere.slot: expected a slot with a vocabulary ['finance', 'food', 'health', 'schedule'], "
            "found 'nowhere'",
        ),
        (
            {**BASE_REUSE, "memory_change_public": True},
            "reuse.food.memory_change_public: expected only with memory_change = true, found 'memory_change = false'",
        ),
        (
            {**BASE_REUSE, "memory_change": True, "memory_change_public": True},
            "reuse.food.refresh_on: expected the public event query that announces a memory change "
            "(memory_change_public = true), found 'none'",
        ),
        ({**BASE_REUSE, "memory_change": "yes"}, "reuse.food.memory_change: expected true or false, found 'yes'"),
        ({**BASE_REUSE, "every": 3}, None),
    ],
)
def test_bad_reuse_table_is_one_exact_line(entry: dict[str, Any], message: str | None) -> None:
    data = _figure2_data()
    data["reuse"] = [entry]
    with pytest.raises(InputError) as caught:
        interface_from_dict(data)
    text = str(caught.value)
    assert "\n" not in text
    if message is None:
        assert text.startswith("reuse.food: ") and "'every'" in text
    else:
        assert text == message


def test_two_rules_for_one_slot_are_refused() -> None:
    data = _figure2_data()
    data["reuse"] = [BASE_REUSE, BASE_REUSE]
    with pytest.raises(InputError) as caught:
        interface_from_dict(data)
    assert str(caught.value) == "reuse: expected at most one reuse rule per slot, found 'two for slot food'"


def test_reuse_family_defaults_to_the_queries_that_read_the_slot() -> None:
    data = _figure2_data()
    data["reuse"] = [{"slot": "health", "refresh_after": 2}]
    (rule,) = interface_from_dict(data).interface.reuse.rules
    assert rule.queries == frozenset({"checkup-reminder"})
    assert rule.reuse_when_exhausted and not rule.memory_change


# ---------------------------------------------------------------- durable sessions


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_durable_session_re_serves_like_the_kernel_and_after_a_restart(kind: str, tmp_path: Path) -> None:
    """The durable session releases the re-served view uncharged (not the generic view), its
    state equals the in-memory kernel's, and a session reopened on the same ledger decides
    reuse from the history the store kept."""
    from dpmem_ref.ledger import MemoryLedgerStore, SQLiteLedgerStore
    from dpmem_ref.turn import run_interaction
    from dpmem_ref.turn.durable import DurableSession

    loaded = load_interface_file(FIGURE2_REUSE)
    queries = ["affordable-dinner", "checkup-reminder", "affordable-dinner", "weeknight-plan", "affordable-dinner"]
    reference = run_interaction(loaded.interface, queries, loaded.store("M"), SeededRandomSource(5))
    store = MemoryLedgerStore() if kind == "memory" else SQLiteLedgerStore(tmp_path / "l.db")
    session = DurableSession.open(loaded.interface, store, "u", "i", loaded.store("M"), SeededRandomSource(5))
    turns = [session.run_turn(query) for query in queries[:3]]
    if kind == "sqlite":  # a new session object on the same database: history from the store
        session = DurableSession.open(
            loaded.interface, SQLiteLedgerStore(tmp_path / "l.db"), "u", "i", loaded.store("M"), SeededRandomSource(5)
        )
    turns += [session.run_turn(query) for query in queries[3:]]
    food = [release for turn in turns for release in turn.releases if release.slot == "food"]
    assert [r.admitted for r in food] == [True, False, False]
    assert {r.view for r in food} == {food[0].view} and all(not r.charge_set for r in food[1:])
    assert [dict(t.record.control).get("food") for t in turns] == ["released", None, "reused", None, "reused"]
    if kind == "memory":
        assert session.state() == reference


def test_dpmem_run_says_reused_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from dpmem_ref.cli import main
    from tests.schemas.test_json_schemas import validate

    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\naffordable-dinner\n")
    args = ["run", str(FIGURE2_REUSE), "--store", "M", "--queries", str(queries), "--seed", "1", "--no-release-deadline"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.count("reused, cost 0") == 2 and "fallback" not in text
    assert main([*args, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    validate("run", document)
    assert [[s["status"] for s in t["slots"]] for t in document["turns"]] == [["released"] * 2, ["reused"] * 2]
