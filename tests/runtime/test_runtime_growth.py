"""Growth keeps groups whole (docs/agent.md, "Interface evolution"): a position appended to
a slot joins every group that holds the slot's existing positions, or the change is
classified unsafe with one line naming the group. Every slot of the example is grown, and
the exact engine checks that every read of the new position is charged to its attributes
(and that the unsafe variant would leak with no charge)."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.analysis import worst_case_loss
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.policy import EMPTY_ITEM, MemoryItem
from dpmem_ref.interface import ChargePlan, Interface
from dpmem_ref.ledger.epochs import interface_record
from dpmem_ref.ledger.evolution import classify
from dpmem_ref.runtime.tagger import slot_tags
from tests.runtime_fixtures import INTERFACE, copy_example, ledger_table, open_runtime

SLOTS = ["health", "food", "finance", "schedule"]
NEW = 12  # the example has 11 positions


def grown(text: str, slot: str, join: bool) -> str:
    """Append a position to `slot`; with `join`, add it to every group holding one of the
    slot's positions; add a route reading the new position with the slot's others."""
    positions = re.search(r"^positions = \[(.*)\]$", text, re.M)
    assert positions is not None
    names = [name.strip().strip('"') for name in positions.group(1).split(",")]
    existing = [i for i, name in enumerate(names, start=1) if name == slot]
    text = text.replace(positions.group(0), f"positions = [{positions.group(1)}, \"{slot}\"]")
    if join:
        def add(match: re.Match[str]) -> str:
            group = [int(p) for p in match.group(1).split(",")]
            return f"group = [{', '.join(map(str, group + [NEW]))}]" if set(group) & set(existing) else match.group(0)

        text = re.sub(r"^group = \[(.*)\]$", add, text, flags=re.M)
    read = ", ".join(map(str, [*existing, NEW]))
    return text + f'\n[[queries]]\nname = "grow-{slot}"\ntext = "About my {slot}."\n[[queries.reads]]\nslot = "{slot}"\npositions = [{read}]\n'


def _load(tmp_path: Path, text: str) -> Interface:
    path = tmp_path / "interface.toml"
    path.write_text(text)
    return load_interface_file(path).interface


def _groups_of(interface: Interface, position: int) -> list[str]:
    return [a.name for a in interface.policy.attributes if position in a.group]


@pytest.mark.parametrize("slot", SLOTS)
def test_growing_a_slot_keeps_its_groups_whole_and_every_read_is_charged(slot: str, tmp_path: Path) -> None:
    original = INTERFACE.read_text()
    old = load_interface_file(INTERFACE).interface
    new = _load(tmp_path, grown(original, slot, join=True))
    changes = classify(interface_record(old, None), interface_record(new, None))
    assert all(c.safe for c in changes), [c.kind for c in changes if not c.safe]
    slot_groups = {a.name for a in old.policy.attributes if a.group & set(old.policy.layout.positions_of(slot))}
    assert set(_groups_of(new, NEW)) == slot_groups
    # Every read of the new position, in every route, charges every attribute whose group holds it.
    reads = [read for query in new.queries for read in query.reads if NEW in read.positions]
    assert reads
    for read in reads:
        assert ChargePlan.of(new, read).charge_set >= slot_groups
    # Exact engine: a sensitive item at the new position vs none are a-neighbours, and the
    # worst case over every strategy reading it is within B_a (and live: above 0).
    tags = frozenset(slot_tags(new, slot))
    store = load_store(new, {NEW: MemoryItem(tags=tags, text="sensitive")})
    neighbour = store.replace({NEW: EMPTY_ITEM})
    query = next(q for q in new.queries if q.name == f"grow-{slot}")
    for attribute in slot_groups:
        worst = worst_case_loss(new, store, neighbour, horizon=2, queries=[query])
        assert worst.holds(new.caps[attribute])
        assert worst.worst.upper > 0 or not tags


def load_store(interface: Interface, contents: dict[int, MemoryItem]) -> object:
    from dpmem_ref.core.policy import Store

    return Store.from_mapping(interface.policy.layout, contents, name="grown")


@pytest.mark.parametrize("slot", [s for s in SLOTS if s != "schedule"])  # schedule is in no group
def test_a_position_left_outside_its_slots_group_is_unsafe(slot: str, tmp_path: Path) -> None:
    original = INTERFACE.read_text()
    old = load_interface_file(INTERFACE).interface
    new = _load(tmp_path, grown(original, slot, join=False))
    changes = classify(interface_record(old, None), interface_record(new, None))
    unsafe = [c for c in changes if not c.safe]
    assert [c.kind for c in unsafe] and {c.kind for c in unsafe} == {"position-outside-slot-groups"}
    assert all(f"position {NEW} of slot {slot}" in c.detail for c in unsafe)
    # Why: the new position's reads charge no attribute, yet a sensitive item there leaks.
    query = next(q for q in new.queries if q.name == f"grow-{slot}")
    only_new = [r for r in query.reads if NEW in r.positions]
    tags = frozenset(slot_tags(new, slot))
    store = load_store(new, {NEW: MemoryItem(tags=tags, text="sensitive")})
    neighbour = store.replace({NEW: EMPTY_ITEM})
    assert not _groups_of(new, NEW)  # outside every group: these stores are nobody's neighbours
    assert only_new and worst_case_loss(new, store, neighbour, horizon=1, queries=[query], strict=False).worst.upper > 0


def test_the_runtime_refuses_growth_outside_the_group_then_serves_the_whole_one(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    runtime = open_runtime(agent, memory, url)
    runtime.turn("alice", "recipes", "i", "doctor check-up")
    spent = ledger_table(runtime, "alice")
    runtime.close()
    path = tmp_path / "interface.toml"
    original = path.read_text()
    path.write_text(grown(original, "health", join=False))
    with pytest.raises(InputError, match="position-outside-slot-groups") as caught:
        open_runtime(agent, memory, url)
    assert "\n" not in str(caught.value)
    path.write_text(grown(original, "health", join=True))
    agent.write_text(agent.read_text().replace("[router.keywords]\n", '[router.keywords]\ngrow-health = ["my dose"]\n'))
    runtime = open_runtime(agent, memory, url)  # safe: carried over
    assert ledger_table(runtime, "alice") == spent and runtime.epoch == 0
    runtime.add_memory("alice", "health", "I sleep badly.", tags=[])  # fills position 3
    item = runtime.add_memory("alice", "health", "My insulin dose changed.", tags=["blood-sugar"])
    assert {e.item_id: e.position for e in runtime.memory_items("alice")}[item] == NEW  # health is full: lands at 12
    before = Fraction(ledger_table(runtime, "alice")[(0, "recipes")]["diabetes"])
    turn = runtime.turn("alice", "recipes", "j", "What about my dose?")
    assert turn.route == "grow-health"
    after = ledger_table(runtime, "alice")[(0, "recipes")]["diabetes"]
    assert after > before or dict(turn.control)["health"] == "fallback"  # the read of 12 is charged to diabetes
    runtime.close()


@pytest.mark.parametrize(("joined", "missing"), [("diabetes", "debt"), ("debt", "diabetes")])
def test_a_position_joining_only_some_of_its_slots_groups_is_unsafe(joined: str, missing: str, tmp_path: Path) -> None:
    """The food slot lies in both groups: joining one of them is not enough."""
    original = INTERFACE.read_text()
    old = load_interface_file(INTERFACE).interface
    text = grown(original, "food", join=False)
    group = {"diabetes": "group = [1, 2, 3, 4, 5, 6]", "debt": "group = [4, 5, 6, 7, 8, 9]"}[joined]
    text = text.replace(group, group.replace("]", f", {NEW}]"))
    new = _load(tmp_path, text)
    unsafe = [c for c in classify(interface_record(old, None), interface_record(new, None)) if not c.safe]
    assert [(c.kind, c.detail) for c in unsafe] == [
        ("position-outside-slot-groups", f"position {NEW} of slot food is outside group {missing}")
    ]


def test_growing_two_positions_at_once_checks_each(tmp_path: Path) -> None:
    original = INTERFACE.read_text()
    old = load_interface_file(INTERFACE).interface
    text = original.replace('"schedule", "schedule"]', '"schedule", "schedule", "health", "finance"]')
    text = text.replace("group = [1, 2, 3, 4, 5, 6]", "group = [1, 2, 3, 4, 5, 6, 12]")  # health joins; finance does not
    new = _load(tmp_path, text)
    unsafe = [c.detail for c in classify(interface_record(old, None), interface_record(new, None)) if not c.safe]
    assert unsafe == ["position 13 of slot finance is outside group debt"]
