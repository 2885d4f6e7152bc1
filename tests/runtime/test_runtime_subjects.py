"""The protected subject: every memory item has exactly one owner, budgets are keyed by it,
and no choice of user ids multiplies them (docs/agent.md, "Memory" and "Budget scopes").

An attacker application (or a careless keys file) asks for many ids: spellings of the
owner's id, other users, fresh ids. Whatever the ids, the only scope whose reads depend
on alice's protected items is alice's own, so the charges that can reveal her attributes
are her scopes' charges, each within its share.
"""

from __future__ import annotations

import json
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.policy import EMPTY_ITEM, differing_positions
from tests.runtime_fixtures import MEMORY, ROOT, copy_example, open_runtime

IDS = ["alice", "Alice", "ALICE", "alice.", "alice_", "alice-2", "bob", "0", "a.l.i.c.e", "alice" + "x" * 120]
QUERIES = ["What should I cook for dinner tonight?", "Any advice before my doctor check-up?", "Budget tips please"]


def _without_protected(memory: Path, out: Path) -> Path:
    """The neighbour M': every item at a position of a protected group removed."""
    groups = {"health", "food", "finance"}  # the example's groups cover these slots whole
    lines = [line for line in memory.read_text().splitlines() if line.strip()]
    out.write_text("".join(line + "\n" for line in lines if json.loads(line)["slot"] not in groups))
    return out


def test_many_ids_do_not_multiply_the_budget_over_one_memory(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)  # the shipped example memory
    neighbour = _without_protected(memory, tmp_path / "neighbour.jsonl")
    full = open_runtime(agent, memory, "memory:")
    empty = open_runtime(agent, neighbour, "memory:")
    for user in IDS:
        for app in ("recipes", "finance"):
            for query in QUERIES * 3:
                full.turn(user, app, "i", query)
    # Whose reads depend on alice's protected items: the ids whose store differs between M and M'.
    readers = [user for user in IDS if differing_positions(full.memory.store(user), empty.memory.store(user))]
    assert readers == ["alice"]
    for user in IDS[1:]:  # every other id reads no protected position at all
        store = full.memory.store(user)
        group = set().union(*(a.group for a in full.interface.policy.attributes))
        assert store.read(sorted(group)) == (EMPTY_ITEM,) * len(group)
    # The charges that can reveal alice's attributes: her own scopes', each within its share.
    shares = {"recipes": {"diabetes": Fraction(2), "debt": Fraction(1)}, "finance": {"diabetes": Fraction(1), "debt": Fraction(2)}}
    total = {a: Fraction(0) for a in full.interface.caps}
    for row in full.ledgers("alice"):
        app = row["scope"]["app"]
        if app is None:
            continue
        spent = {a: Fraction(v) for a, v in row["ledgers"].items()}
        assert all(spent[a] <= shares[app][a] for a in spent)
        total = {a: total[a] + spent[a] for a in total}
    assert all(total[a] <= 3 for a in total)  # the per-user cap U_a, whatever the ids
    full.close()
    empty.close()


@pytest.mark.parametrize("owner", [None, "bob"])
def test_an_item_without_exactly_one_owner_is_refused(owner: str | None, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    item = {"slot": "schedule", "text": "secret text 12345"}
    if owner is None:
        item["public"] = "false"  # not a boolean either: refused
    lines = memory.read_text() + json.dumps({"slot": "health", "text": "secret text 12345"}) + "\n"
    memory.write_text(lines)
    with pytest.raises(InputError) as caught:
        open_runtime(agent, memory, "memory:")
    message = str(caught.value)
    assert "\n" not in message and "memory line 7.user" in message and "12345" not in message


def test_a_public_item_sits_outside_every_group_and_is_seen_by_all(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    memory.write_text(memory.read_text() + json.dumps({"slot": "schedule", "text": "The office closes at six.", "public": True}) + "\n")
    runtime = open_runtime(agent, memory, "memory:")
    public = [e for e in runtime.memory_items("bob") if e.user is None]
    assert len(public) == 1 and public[0].position == 11
    assert all(public[0].position not in a.group for a in runtime.interface.policy.attributes)
    assert [e for e in runtime.memory_items("bob") if e.user is not None] == []
    with pytest.raises(InputError, match="public"):  # no room outside the groups in health
        runtime.memory.copy().add(None, "health", "public text")
    runtime.close()


def test_the_trusted_book_adds_a_public_item_outside_every_group(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    book = runtime.memory.copy()
    item = book.add(None, "schedule", "The office closes at six.")
    (public,) = [e for e in book.entries("bob") if e.item_id == item]
    assert (public.user, public.position, public.slot) == (None, 11, "schedule")
    assert public.to_json() == {"id": item, "slot": "schedule", "position": 11, "text": "The office closes at six.", "tags": [], "public": True}
    runtime.close()


def test_an_added_item_is_read_only_under_its_owner(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    runtime.add_memory("bob", "finance", "I owe money on two loans.")
    assert [e.user for e in runtime.memory_items("bob")] == ["bob"]
    for user in ("Bob", "bob.", "alice"):
        assert all(e.user != "bob" for e in runtime.memory_items(user))
    runtime.close()


def test_the_shipped_examples_give_each_item_an_owner_and_each_app_only_that_owner() -> None:
    items = [json.loads(line) for line in MEMORY.read_text().splitlines() if line.strip()]
    owners = {item.get("user") for item in items}
    assert None not in owners and owners == {"alice"}
    keys = tomllib.loads((ROOT / "examples" / "agent" / "keys.example.toml").read_text())
    agent = tomllib.loads((ROOT / "examples" / "agent" / "assistant.toml").read_text())
    for name, app in keys["apps"].items():
        assert set(app["users"]) <= owners and len(app["users"]) == 1
        assert name in agent["scopes"]["shares"]  # every served application has a declared share
