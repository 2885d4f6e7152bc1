"""Interface evolution: every change classified; safe ones carry the ledgers
over, unsafe ones are refused (one line, nothing changed) unless a recorded new budget
epoch starts. Safe changes are checked with the exact engine where it applies: the old
transcript replays under the new interface and the worst case over the new catalogue
(which contains every old strategy) bounds the loss of the whole concatenated transcript."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

from dpmem_ref.analysis import replay_transcript, worst_case_loss
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.policy import EMPTY_ITEM, MemoryItem
from dpmem_ref.ledger.epochs import interface_record
from dpmem_ref.ledger.evolution import RULES, classify
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from tests.runtime_fixtures import INTERFACE, copy_example, ledger_table, open_runtime

NEW_ROUTE = """
[[queries]]
name = "late-snack"
text = "Any idea for a late snack?"
[[queries.reads]]
slot = "health"
positions = [1, 2, 12]
"""
APPENDED = (
    '"schedule", "schedule"]',
    '"schedule", "schedule", "health"]',
)

EDITS: dict[str, list[tuple[str, str]]] = {
    "route-added": [
        (
            '[[queries]]\nname = "weeknight-plan"',
            NEW_ROUTE.replace("12", "3") + '\n[[queries]]\nname = "weeknight-plan"',
        )
    ],
    "position-appended": [APPENDED, ("group = [1, 2, 3, 4, 5, 6]", "group = [1, 2, 3, 4, 5, 6, 12]")],
    "view-added": [
        ("[slots.finance]", '[slots.food.views.home-cooked]\ntext = "Favour simple recipes."\n\n[slots.finance]')
    ],
    "cap-lowered": [("group = [1, 2, 3, 4, 5, 6]\ncap = 2", 'group = [1, 2, 3, 4, 5, 6]\ncap = "3/2"')],
    "budget-parameter-changed": [("K = 4", "K = 5")],
    "cap-raised": [("group = [1, 2, 3, 4, 5, 6]\ncap = 2", "group = [1, 2, 3, 4, 5, 6]\ncap = 4")],
    "existing-position-joined-group": [("group = [1, 2, 3, 4, 5, 6]", "group = [1, 2, 3, 4, 5, 6, 10]")],
    "view-removed": [
        (
            '[slots.health.views.active-lifestyle]\ntext = "Build on an existing exercise habit."\n'
            'compatible = ["exercise"]\nspecific = ["exercise"]\n',
            "",
        )
    ],
    "position-left-group": [("group = [4, 5, 6, 7, 8, 9]", "group = [4, 5, 6, 7, 8]")],
    "attribute-removed": [
        ('[attributes.debt]\ndescription = "severe unsecured debt"\ngroup = [4, 5, 6, 7, 8, 9]\ncap = 2\n', "")
    ],
}


def _edit(path: Path, kind: str) -> None:
    text = path.read_text()
    for old, new in EDITS[kind]:
        assert old in text, (kind, old)
        text = text.replace(old, new)
    if kind == "position-appended":
        text += NEW_ROUTE
    path.write_text(text)
    if kind == "view-removed":  # no view reads the exercise tag any more: drop its tagger rule
        agent = path.parent / "assistant.toml"
        agent.write_text(
            "".join(line for line in agent.read_text().splitlines(True) if not line.startswith("exercise"))
        )


@pytest.mark.parametrize("kind", sorted(EDITS))
def test_each_change_is_classified(kind: str, tmp_path: Path) -> None:
    agent, _ = copy_example(tmp_path)
    interface_path = tmp_path / "interface.toml"
    before = interface_record(load_interface_file(interface_path).interface, None)
    _edit(interface_path, kind)
    after = interface_record(load_interface_file(interface_path).interface, None)
    kinds = {c.kind for c in classify(before, after)}
    assert kind in kinds
    assert all(RULES[k][0] for k in kinds) == RULES[kind][0]


SAFE = sorted(k for k in EDITS if RULES[k][0])
UNSAFE = sorted(k for k in EDITS if not RULES[k][0])


def _spend(runtime: object, turns: int = 3) -> None:
    for n in range(turns):
        runtime.turn("alice", "recipes", f"i{n}", "What should I cook for dinner tonight?")  # type: ignore[attr-defined]
        runtime.turn("alice", "recipes", f"i{n}", "doctor check-up")  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", SAFE)
def test_safe_change_carries_the_ledgers(kind: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    runtime = open_runtime(agent, memory, url, user_caps=False)  # the interface's rules: caps B_a
    _spend(runtime, 1)
    spent = ledger_table(runtime, "alice")
    runtime.close()
    _edit(tmp_path / "interface.toml", kind)
    runtime = open_runtime(agent, memory, url, user_caps=False)
    carried = ledger_table(runtime, "alice")
    assert carried == spent and runtime.epoch == 0
    assert runtime.epochs()[-1]["reason"] == "carried over"
    assert kind in {c["kind"] for c in runtime.epochs()[-1]["changes"]}
    _spend(runtime, 6)
    caps = runtime.interface.caps
    after = ledger_table(runtime, "alice")[(0, "recipes")]
    assert all(after[a] <= caps[a] for a in caps)
    rows = {row["scope"]["app"]: row for row in runtime.ledgers("alice")}
    assert {a: Fraction(c) for a, c in rows["recipes"]["caps"].items()} == dict(caps)
    runtime.close()


def test_a_runtime_whose_database_was_rebound_by_another_opens_no_new_scope(tmp_path: Path) -> None:
    """Another process carried the database over to a changed interface: this runtime, still
    serving the old one, is refused the next scope it opens (its sessions name the
    interface's fingerprint), in one line, and charges nothing there."""
    agent, memory = copy_example(tmp_path)
    database = tmp_path / "l.db"
    old = open_runtime(agent, memory, f"sqlite:///{database}")
    old.turn("alice", "recipes", "i", "What should I cook for dinner tonight?")
    _edit(tmp_path / "interface.toml", "route-added")
    new = open_runtime(agent, memory, f"sqlite:///{database}")
    assert new.epochs()[-1]["reason"] == "carried over"
    stored, served = interface_fingerprint(new.interface), interface_fingerprint(old.interface)
    assert stored != served
    with pytest.raises(InputError) as caught:
        old.turn("alice", "finance", "i", "Budget tips please")
    assert str(caught.value) == (
        f"ledger database {database}: expected the interface it was created with (fingerprint {stored[:12]}), "
        f"found 'a different interface (fingerprint {served[:12]})'"
    )
    assert (0, "finance") not in ledger_table(new, "alice")
    old.close()
    new.close()


@pytest.mark.parametrize("kind", UNSAFE)
def test_unsafe_change_refused_then_new_epoch(kind: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    options = {"user_caps": False}  # the interface's rules: caps B_a (shares have their own test)
    runtime = open_runtime(agent, memory, url, **options)
    _spend(runtime, 1)
    spent = ledger_table(runtime, "alice")
    runtime.close()
    database = (tmp_path / "l.db").read_bytes()
    _edit(tmp_path / "interface.toml", kind)
    with pytest.raises(InputError) as caught:
        open_runtime(agent, memory, url, **options)
    assert "\n" not in str(caught.value) and "--new-epoch" in str(caught.value)
    assert (tmp_path / "l.db").read_bytes() == database  # nothing changed
    runtime = open_runtime(agent, memory, url, new_epoch=f"operator: {kind}", **options)
    assert runtime.epoch == 1
    log = runtime.epochs()
    assert log[-1]["epoch"] == 1 and log[-1]["reason"] == f"operator: {kind}"
    assert kind in {c["kind"] for c in log[-1]["changes"]}
    table = ledger_table(runtime, "alice")
    assert {k: v for k, v in table.items() if k[0] == 0} == spent  # the old epoch stays recorded
    runtime.remaining("alice", "recipes")  # opens the new epoch's scopes: fresh, at zero
    fresh = {k: v for k, v in ledger_table(runtime, "alice").items() if k[0] == 1}
    assert (1, "recipes") in fresh and all(value == 0 for row in fresh.values() for value in row.values())
    runtime.close()


def test_user_cap_raised_is_unsafe(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    open_runtime(agent, memory, url).close()
    with pytest.raises(InputError, match="user-cap-raised"):
        open_runtime(agent, memory, url, user_caps={"diabetes": 4, "debt": 3})
    with pytest.raises(InputError, match="summing to at most the per-user cap"):  # the file's shares sum to 3
        open_runtime(agent, memory, url, user_caps={"diabetes": "5/2", "debt": 3})
    shares = {"recipes": {"diabetes": "3/2", "debt": 1}, "finance": {"diabetes": 1, "debt": 2}}
    lowered = open_runtime(agent, memory, url, user_caps={"diabetes": "5/2", "debt": 3}, shares=shares)
    kinds = [c["kind"] for c in lowered.epochs()[-1]["changes"]]
    assert lowered.epoch == 0 and kinds == ["user-cap-lowered", "share-lowered"]
    lowered.close()


def _neighbours(runtime: object, attribute: str) -> tuple[object, object]:
    store = runtime.memory.store("alice")  # type: ignore[attr-defined]
    group = runtime.interface.policy.attribute(attribute).group  # type: ignore[attr-defined]
    full = store.replace({p: MemoryItem(tags=frozenset({"blood-sugar", "medication"})) for p in group if p <= 3})
    return full, store.replace({p: EMPTY_ITEM for p in group})


@pytest.mark.parametrize("kind", ["route-added", "position-appended"])
def test_safe_change_exact_engine(kind: str, tmp_path: Path) -> None:
    """Old-then-new is one strategy of the new interface (its catalogue contains the old
    one, and the old transcript never read the new position): the whole concatenated
    transcript replays under the new interface, and the worst case over the new
    catalogue bounds its exact loss by B_a."""
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    runtime = open_runtime(agent, memory, url, user_caps=False)
    _spend(runtime, 2)
    runtime.close()
    _edit(tmp_path / "interface.toml", kind)
    runtime = open_runtime(agent, memory, url, user_caps=False)
    for n in range(3):
        runtime.turn("alice", "recipes", f"j{n}", "Any idea for a late snack?")
    scoped, _ = runtime._scope("alice", "recipes")  # noqa: SLF001
    history = scoped.load().history
    new = runtime.interface
    store_a, store_b = _neighbours(runtime, "diabetes")
    worst = worst_case_loss(new, store_a, store_b, horizon=len(history))
    assert worst.holds(Fraction(2))
    loss = abs(
        replay_transcript(new, store_a, history).log_probability
        - replay_transcript(new, store_b, history).log_probability
    )
    assert loss <= worst.worst.upper + mpmath.mpf("1e-30")
    runtime.close()


def test_charge_removed_is_a_safe_route_change(tmp_path: Path) -> None:
    """A declared charge set wider than Gamma*(R) dropped back to the minimal one (Eq. 4):
    still complete (C2, re-checked at open), so safe; the ledgers carry over."""
    agent, memory = copy_example(tmp_path)
    path = tmp_path / "interface.toml"
    original = path.read_text()
    marker = 'positions = [1, 2, 3]\nrelevance = { blood-sugar-conscious = "1/2" }'
    assert marker in original
    path.write_text(original.replace(marker, marker + '\ncharge = ["diabetes", "debt"]'))
    url = f"sqlite:///{tmp_path / 'l.db'}"
    runtime = open_runtime(agent, memory, url)
    before = interface_record(runtime.interface, None)
    runtime.turn("alice", "recipes", "i", "doctor check-up")  # charges diabetes AND debt (declared)
    spent = ledger_table(runtime, "alice")
    assert spent[(0, "recipes")]["debt"] > 0
    runtime.close()
    path.write_text(original)
    after = interface_record(load_interface_file(path).interface, None)
    assert [(c.kind, c.safe) for c in classify(before, after)] == [("route-changed", True)]
    runtime = open_runtime(agent, memory, url)
    assert ledger_table(runtime, "alice") == spent
    runtime.turn("alice", "recipes", "i", "doctor check-up")  # now charges diabetes only
    assert ledger_table(runtime, "alice")[(0, "recipes")]["debt"] == spent[(0, "recipes")]["debt"]
    runtime.close()


def _change(kind: str, detail: str) -> dict[str, object]:
    return {"kind": kind, "detail": detail, "safe": RULES[kind][0], "reason": RULES[kind][1]}


SHARES = {"recipes": {"diabetes": "2/1", "debt": "1/1"}, "finance": {"diabetes": "1/1", "debt": "2/1"}}


@pytest.mark.parametrize(
    ("before", "after", "changes"),
    [
        (None, SHARES, [_change("shares-introduced", "scopes.shares")]),
        (SHARES, None, [_change("shares-removed", "scopes.shares")]),
        (SHARES, {**SHARES, "mail": {"diabetes": "0/1", "debt": "0/1"}}, [_change("share-added", "share of mail")]),
        (SHARES, {"recipes": SHARES["recipes"]}, [_change("share-removed", "share of finance")]),
        (
            SHARES,
            {**SHARES, "recipes": {"diabetes": "3/2", "debt": "1/1"}},
            [_change("share-lowered", "share of recipes, diabetes: 2/1 -> 3/2")],
        ),
        (
            SHARES,
            {**SHARES, "recipes": {"diabetes": "2/1", "debt": "3/2"}},
            [_change("share-raised", "share of recipes, debt: 1/1 -> 3/2")],
        ),
        # an attribute missing from one side is left to the attribute changes; the
        # application's other attributes are still compared
        (
            SHARES,
            {**SHARES, "recipes": {"diabetes": "3/2"}},
            [_change("share-lowered", "share of recipes, diabetes: 2/1 -> 3/2")],
        ),
    ],
    ids=["introduced", "withdrawn", "added", "removed", "lowered", "raised", "attribute-missing"],
)
def test_share_changes_are_classified(before: object, after: object, changes: list[dict[str, object]]) -> None:
    interface = load_interface_file(INTERFACE).interface
    old = interface_record(interface, {"diabetes": Fraction(3), "debt": Fraction(3)})
    new = dict(old)
    if before is not None:
        old["shares"] = before
    if after is not None:
        new["shares"] = after
    assert [c.to_json() for c in classify(old, new)] == changes


USER_CAPS = {"debt": "3/1", "diabetes": "3/1"}


@pytest.mark.parametrize(
    ("before", "after", "changes"),
    [
        (None, None, []),
        (None, USER_CAPS, [_change("user-scope-added", "scopes.user_caps")]),
        (USER_CAPS, None, [_change("user-scope-removed", "scopes.user_caps")]),
        (USER_CAPS, {**USER_CAPS, "gambling": "1/1"}, [_change("user-scope-added", "user cap gambling")]),
        ({**USER_CAPS, "gambling": "1/1"}, USER_CAPS, [_change("user-scope-removed", "user cap gambling")]),
        (USER_CAPS, {**USER_CAPS, "debt": "5/2"}, [_change("user-cap-lowered", "user cap debt: 3/1 -> 5/2")]),
        (USER_CAPS, {**USER_CAPS, "diabetes": "4/1"}, [_change("user-cap-raised", "user cap diabetes: 3/1 -> 4/1")]),
    ],
    ids=["none", "introduced", "withdrawn", "attribute-added", "attribute-removed", "lowered", "raised"],
)
def test_user_cap_changes_are_classified(
    before: dict[str, str] | None, after: dict[str, str] | None, changes: list[dict[str, object]]
) -> None:
    """The per-user scope (U_a): introduced or withdrawn as a whole, or changed per attribute."""
    interface = load_interface_file(INTERFACE).interface
    old, new = interface_record(interface, None), interface_record(interface, None)
    old["user_caps"], new["user_caps"] = before, after
    assert [c.to_json() for c in classify(old, new)] == changes


ONLINE = 'rule = "online"   # eps = min_{a in Gamma} B_a / K = 1/2\nK = 4'
PREALLOCATED = 'rule = "preallocated"\nplan = { diabetes = 4, debt = 4 }'
WEEKNIGHT_PLAN = (
    '[[queries]]\nname = "weeknight-plan"\ntext = "Plan my weeknight evenings."\n'
    '[[queries.reads]]\nslot = "schedule"\npositions = [10, 11]\nrelevance = { quick-prep = "1" }\n'
)
# a new slot at a new position, protected by a new attribute over that position only
PRIVATE_NOTES = ("[budget]", '[attributes.private]\ndescription = "private notes"\ngroup = [12]\ncap = 1\n\n[budget]')
NOTES_SLOT = (
    "[slots.finance]",
    '[slots.notes]\ngeneric = "notes-generic"\n[slots.notes.views.notes-generic]\ntext = "Keep notes general."\n\n[slots.finance]',
)
# a new attribute over positions the weeknight-plan route has read uncharged
BUSY_EVENINGS = ("[budget]", '[attributes.busy]\ndescription = "busy evenings"\ngroup = [10, 11]\ncap = 1\n\n[budget]')
DELTA_RAISED = ('sensitivity = "3/5"', 'sensitivity = "4/5"')


def _record(path: Path, edits: list[tuple[str, str]]) -> dict[str, object]:
    text = INTERFACE.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    return interface_record(load_interface_file(path).interface, None)


@pytest.mark.parametrize(
    ("before", "after", "changes"),
    [
        (
            [],
            [APPENDED, ("group = [1, 2, 3, 4, 5, 6]", "group = [1, 2, 3, 4, 5, 6, 12]")],
            [
                _change("position-appended", "position 12 (health)"),
                _change("position-joined-group", "position 12 joins diabetes"),
            ],
        ),
        (
            [],
            [('"finance", "schedule", "schedule"]', '"schedule", "finance", "schedule"]')],
            [_change("position-changed", "the existing positions differ")],
        ),
        ([], [("K = 4", "K = 5")], [_change("budget-parameter-changed", "budget")]),
        ([], [(ONLINE, PREALLOCATED)], [_change("budget-rule-changed", "budget")]),
        (
            [],
            [("K = 4\n", 'K = 4\nuncharged_epsilon = "1/2"\n')],
            [_change("uncharged-epsilon-changed", "budget.uncharged_epsilon")],
        ),
        ([], [("[budget]", "[deployment]\nenforce_cap = false\n\n[budget]")], [_change("part-changed", "cap_rule")]),
        (
            [],
            [("K = 4\n", 'K = 4\nperiod = "30 days"\n')],
            [_change("budget-period-changed", "budget.period (None -> 30 days)")],
        ),
        (
            [("K = 4\n", 'K = 4\nperiod = "30 days"\n')],
            [("K = 4\n", 'K = 4\nperiod = "7 days"\n')],
            [_change("budget-period-changed", "budget.period (30 days -> 7 days)")],
        ),
        ([], [(WEEKNIGHT_PLAN, "")], [_change("route-removed", "weeknight-plan")]),
        (
            [],
            [('"schedule", "schedule"]', '"schedule", "schedule", "notes"]'), PRIVATE_NOTES, NOTES_SLOT],
            [
                _change("position-appended", "position 12 (notes)"),
                _change("attribute-added", "private"),
                _change("vocabulary-added", "notes"),
            ],
        ),
        ([], [BUSY_EVENINGS], [_change("attribute-added-over-read-positions", "busy")]),
        (
            [],
            [
                ('"schedule", "schedule"]', '"calendar", "calendar"]'),
                ("[slots.schedule", "[slots.calendar"),
                ('slot = "schedule"', 'slot = "calendar"'),
            ],
            [
                _change("position-changed", "the existing positions differ"),
                _change("route-changed", "weeknight-plan"),
                _change("vocabulary-added", "calendar"),
                _change("vocabulary-removed", "schedule"),
            ],
        ),
        (
            [],
            [
                (
                    'generic = "schedule-generic"\n[slots.schedule.views.schedule-generic]',
                    'generic = "schedule-default"\n[slots.schedule.views.schedule-default]',
                )
            ],
            [
                _change("view-added", "schedule.schedule-default"),
                _change("view-removed", "schedule.schedule-generic"),
                _change("generic-changed", "schedule"),
            ],
        ),
        (
            [],
            [DELTA_RAISED],
            [_change("sensitivity-raised", slot) for slot in ("finance", "food", "health", "schedule")],
        ),
        (
            [DELTA_RAISED],
            [],
            [_change("sensitivity-lowered", slot) for slot in ("finance", "food", "health", "schedule")],
        ),
    ],
    ids=[
        "appended",
        "moved",
        "K",
        "rule",
        "uncharged",
        "cap-rule",
        "period-added",
        "period-changed",
        "route-removed",
        "slot-added-with-its-attribute",
        "attribute-over-read-positions",
        "slot-renamed",
        "generic-renamed",
        "sensitivity-raised",
        "sensitivity-lowered",
    ],
)
def test_each_change_is_listed_as_its_whole_record(
    before: list[tuple[str, str]], after: list[tuple[str, str]], changes: list[dict[str, object]], tmp_path: Path
) -> None:
    """The changes the binding log records: kind, detail (what changed, named), safe and the
    rule's reason, and nothing else found."""
    old = _record(tmp_path / "before.toml", before)
    new = _record(tmp_path / "after.toml", after)
    assert [c.to_json() for c in classify(old, new)] == changes


def test_a_record_without_a_comparable_interface_is_unknown() -> None:
    """No record, a record without an interface (an edited row) or one of another
    description version: nothing to compare with, one unsafe change."""
    new = interface_record(load_interface_file(INTERFACE).interface, None)
    other_version = {**new, "interface": {**new["interface"], "version": 1}}
    unknown = [_change("unknown-record", "no comparable interface record")]
    for old in (None, {}, {"user_caps": None}, other_version):
        assert [c.to_json() for c in classify(old, new)] == unknown


def test_a_swapped_budget_rule_is_refused_then_logged_with_the_new_epoch(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    runtime = open_runtime(agent, memory, url, user_caps=False)
    _spend(runtime, 1)
    runtime.close()
    interface = tmp_path / "interface.toml"
    interface.write_text(interface.read_text().replace(ONLINE, PREALLOCATED))
    with pytest.raises(InputError) as caught:
        open_runtime(agent, memory, url, user_caps=False)
    assert str(caught.value) == (
        "interface: expected a change that carries the ledgers over, or a new budget epoch (--new-epoch REASON), "
        "found 'unsafe change budget-rule-changed (budget; 1 unsafe)'"
    )
    runtime = open_runtime(agent, memory, url, user_caps=False, new_epoch="a preallocated plan")
    assert runtime.epoch == 1
    assert runtime.epochs()[-1]["changes"] == [_change("budget-rule-changed", "budget")]
    runtime.close()
