"""Bad input gets one line and changes nothing.

Each case: the kernel's InputError (one line naming the field, no memory text), and
afterwards the memory file, the runtime's memory and every ledger are as before. The CLI
turns the same cases into one stderr line and exit 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.runtime import AgentRuntime
from tests.runtime_fixtures import ROOT, copy_example, ledger_table, open_runtime

SECRET = "zq-private-marker-81"  # in every memory text a case sends: never in an error

Case = Callable[[AgentRuntime, Path], object]


def _append(memory: Path, line: str) -> None:
    with memory.open("a", encoding="utf-8") as out:
        out.write(line + "\n")


CASES: list[tuple[str, str, Case]] = [
    ("unknown slot", "slot", lambda rt, _: rt.add_memory("alice", "garden", f"I grow {SECRET}")),
    ("item over capacity", "capacity", lambda rt, _: rt.add_memory("alice", "schedule", f"{SECRET} 2")),
    (
        "tag outside the vocabulary",
        "tags",
        lambda rt, _: rt.add_memory("alice", "health", f"{SECRET}", tags=["blood-sugar", f"x-{SECRET}"]),
    ),
    ("text too long", "text", lambda rt, _: rt.add_memory("alice", "health", SECRET * 1000)),
    ("unknown item id", "item_id", lambda rt, _: rt.update_memory("alice", "nope", f"{SECRET}")),
    ("bad user id", "user", lambda rt, _: rt.turn("al/ice", "recipes", "i", "dinner?")),
    ("bad app id", "app", lambda rt, _: rt.turn("alice", "rec ipes", "i", "dinner?")),
    ("bad interaction id", "interaction", lambda rt, _: rt.turn("alice", "recipes", "i:1", "dinner?")),
    ("empty query", "query", lambda rt, _: rt.turn("alice", "recipes", "i", "   ")),
]


@pytest.mark.parametrize(("name", "field", "case"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_one_line_nothing_changed(name: str, field: str, case: Case, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}")
    runtime.turn("alice", "recipes", "i", "dinner tonight?")  # some state to keep
    runtime.add_memory("alice", "schedule", "I cook on Sundays.")  # the schedule slot is now full (2 of 2)
    before_file = memory.read_bytes()
    before_items = runtime.memory_items("alice")
    before_ledgers = ledger_table(runtime, "alice")
    with pytest.raises(InputError) as caught:
        case(runtime, memory)
    message = str(caught.value)
    assert "\n" not in message and field in message and SECRET not in message
    assert memory.read_bytes() == before_file
    assert runtime.memory_items("alice") == before_items
    assert ledger_table(runtime, "alice") == before_ledgers
    runtime.close()


ID_RULE = "expected 1..128 characters of [A-Za-z0-9._-], starting with a letter or digit"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda rt: rt.turn("al/ice", "recipes", "i", "dinner?"), f"user: {ID_RULE}, found 'al/ice' ('/' at character 3)"),
        (lambda rt: rt.turn("alice", "rec ipes", "i", "dinner?"), f"app: {ID_RULE}, found 'rec ipes' (a space at character 4)"),
        (lambda rt: rt.turn("alice", "recipes", "i:1", "dinner?"), f"interaction: {ID_RULE}, found 'i:1' (':' at character 2)"),
        (lambda rt: rt.turn("alice", "recipes", "i", "dinner?", turn_id=".t1"), f"turn_id: {ID_RULE}, found '.t1' (starts with '.')"),
        (
            lambda rt: rt.update_memory("alice", "a.b", f"{SECRET}"),
            "item_id: expected an item id of 1..64 characters of [A-Za-z0-9_-], found 'a.b' ('.' at character 2)",
        ),
        (lambda rt: rt.add_memory("al/ice", "health", f"{SECRET}"), f"user: {ID_RULE}, found 'al/ice' ('/' at character 3)"),
        (lambda rt: rt.update_memory("al/ice", "m1", f"{SECRET}"), f"user: {ID_RULE}, found 'al/ice' ('/' at character 3)"),
        (lambda rt: rt.delete_memory("al/ice", "m1"), f"user: {ID_RULE}, found 'al/ice' ('/' at character 3)"),
        (lambda rt: rt.memory_items("al/ice"), f"user: {ID_RULE}, found 'al/ice' ('/' at character 3)"),
        (lambda rt: rt.ledgers("al/ice"), f"user: {ID_RULE}, found 'al/ice' ('/' at character 3)"),
        (lambda rt: rt.share("rec ipes"), f"app: {ID_RULE}, found 'rec ipes' (a space at character 4)"),
    ],
)
def test_an_id_refusal_names_what_was_found(call: Callable[[AgentRuntime], object], message: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}")
    with pytest.raises(InputError) as caught:
        call(runtime)
    assert str(caught.value) == message
    runtime.close()


QUERY_RULE = "query: expected a query text of 1..4096 characters"


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("   ", "'3 characters'"),  # blank: its length is shown, never its text
        ("", "'0 characters'"),
        ("x" * 4097, "'4097 characters'"),
        (5, "'int'"),  # not text: its type is shown
        (b"dinner?", "'bytes'"),
    ],
)
def test_a_query_refusal_is_one_exact_line(query: object, found: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    with pytest.raises(InputError) as caught:
        runtime.turn("alice", "recipes", "i", query)  # type: ignore[arg-type]
    assert str(caught.value) == f"{QUERY_RULE}, found {found}"
    assert caught.value.field == "query"
    runtime.close()


def test_a_query_of_exactly_the_longest_length_is_served(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    longest = ("dinner " * 600)[:4096]
    turn = runtime.turn("alice", "recipes", "i", longest)
    assert len(longest) == 4096 and turn.query == longest and turn.route == "affordable-dinner"
    runtime.close()


UNKNOWN_ITEM = "item_id: expected the id of one of this user's memory items, found 'an unknown id'"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda rt: rt.share("weather"),
            "app: expected an application with a declared share of the per-user caps ([scopes.shares]), found 'an undeclared application'",
        ),
        (lambda rt: rt.update_memory("alice", "nope", f"{SECRET}"), UNKNOWN_ITEM),
        (lambda rt: rt.delete_memory("alice", "nope"), UNKNOWN_ITEM),
        (lambda rt: rt.delete_memory("bob", "m1"), UNKNOWN_ITEM),  # alice's item: unknown to bob
        (
            lambda rt: rt.add_memory("alice", "garden", f"{SECRET}"),
            "memory.slot: expected a slot among ['health', 'food', 'finance', 'schedule'], found 'an unknown slot'",
        ),
        (
            lambda rt: [rt.add_memory("alice", "schedule", f"{SECRET} {n}") for n in range(2)],  # the slot holds 2
            "memory.slot: expected at most 2 items in slot schedule (its declared capacity), found '3 items'",
        ),
        (lambda rt: rt.add_memory("alice", "health", f"{SECRET}", tags=[""]), "memory.tags: expected a list of tag names, found 'list'"),
        (lambda rt: rt.add_memory("alice", "health", f"{SECRET}", tags="medication"), "memory.tags: expected a list of tag names, found 'str'"),
        (lambda rt: rt.update_memory("alice", "m1", "   "), "memory.text: expected memory text of 1..8192 characters, found '3 characters'"),
    ],
)
def test_a_memory_or_share_refusal_is_one_exact_line(call: Callable[[AgentRuntime], object], message: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    with pytest.raises(InputError) as caught:
        call(runtime)
    assert str(caught.value) == message
    runtime.close()


@pytest.mark.parametrize(
    ("name", "line", "field"),
    [
        ("malformed memory line", '{"slot": "health", "text": "' + SECRET, "memory line 7"),
        ("not an object", json.dumps([SECRET]), "memory line 7"),
        ("unknown key", json.dumps({"slot": "health", "text": SECRET, "secret": 1}), "memory line 7"),
        ("unknown slot in the file", json.dumps({"slot": "garden", "text": SECRET}), "memory line 7.slot"),
        ("tag outside the vocabulary", json.dumps({"slot": "food", "text": SECRET, "tags": ["zz"]}), "tags"),
        ("over capacity", "\n".join(json.dumps({"slot": "schedule", "text": SECRET, "user": "alice"}) for _ in range(2)), "capacity"),
        ("an item without an owner", json.dumps({"slot": "schedule", "text": SECRET}), "memory line 7.user"),
        ("an item with an owner and public", json.dumps({"slot": "schedule", "text": SECRET, "user": "bob", "public": True}), "7.user"),
        ("a public item inside a group", json.dumps({"slot": "health", "text": SECRET, "public": True}), "memory line 7.public"),
        ("public not a boolean", json.dumps({"slot": "schedule", "text": SECRET, "public": "yes"}), "memory line 7.public"),
    ],
)
def test_bad_memory_file_refused_at_open(name: str, line: str, field: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    _append(memory, line)
    before = memory.read_bytes()
    with pytest.raises(InputError) as caught:
        open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}")
    message = str(caught.value)
    assert "\n" not in message and field in message and SECRET not in message
    assert memory.read_bytes() == before
    assert not (tmp_path / "l.db").exists()  # refused before the ledger database was touched


SEED_RULE = "--seed: expected a non-negative integer"


@pytest.mark.parametrize(
    ("seed", "found"),
    [(-1, "-1"), (True, "True"), (1.5, "1.5"), ("7", "'7'"), ([0], "'list'")],
    ids=["negative", "bool", "float", "text", "list"],
)
def test_a_bad_seed_is_refused_at_open_in_one_exact_line(seed: object, found: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    with pytest.raises(InputError) as caught:
        open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}", seed=seed)
    assert str(caught.value) == f"{SEED_RULE}, found {found}"
    assert caught.value.field == "--seed"
    assert not (tmp_path / "l.db").exists()  # refused before the ledger database was touched


def test_seed_zero_is_served(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", seed=0)
    assert runtime.turn("alice", "recipes", "i", "dinner tonight?").route == "affordable-dinner"
    runtime.close()


def _chat(args: list[str], stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{ROOT}{':' + str(ROOT / 'eval')}", "PATH": "/usr/bin:/bin", "DPMEM_LEDGER_DEV_KEY": "1"}
    return subprocess.run(
        [sys.executable, "-m", "dpmem_ref.cli", "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_cli_bad_input_exit_2_one_line(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    _append(memory, '{"slot": "health", "text": "' + SECRET)
    done = _chat([str(agent), "--memory", str(memory), "--user", "alice", "--app", "recipes", "--ephemeral"], "dinner?\n", tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "memory line 7" in done.stderr and SECRET not in done.stderr
    bad_id = _chat([str(agent), "--user", "al ice", "--app", "recipes"], "dinner?\n", tmp_path)
    assert bad_id.returncode == 2 and bad_id.stderr.count("\n") == 1
    assert bad_id.stderr.endswith(f"--user: {ID_RULE}, found 'al ice' (a space at character 3)\n")


def test_cli_second_run_continues_the_scope(tmp_path: Path) -> None:
    """`dpmem chat` twice for the same user and app, other interaction ids: one scope."""
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    common = [str(agent), "--memory", str(memory), "--user", "alice", "--app", "finance", "--store-url", url]
    first = _chat([*common, "--interaction", "monday", "--seed", "1"], "dinner tonight?\nbudget tips\n", tmp_path)
    second = _chat([*common, "--interaction", "tuesday", "--seed", "2"], "dinner tonight?\n", tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines() + second.stdout.splitlines()]
    assert [line["interaction"] for line in lines] == ["monday", "monday", "tuesday"]
    assert all(set(line) >= {"query", "route", "response", "control", "remaining"} for line in lines)
    share = {"diabetes": Fraction(1), "debt": Fraction(2)}  # finance's share of the per-user caps
    spent = [{a: share[a] - Fraction(v) for a, v in line["remaining"].items()} for line in lines]
    assert spent[0]["debt"] == Fraction(1) and spent[1]["debt"] == Fraction(3, 2)  # 1/2 per charged slot
    assert spent[2]["debt"] == Fraction(2) and spent[2]["diabetes"] == Fraction(1)  # continued, not reset
