"""Each line of a memory file: the item it holds (id, slot, position, tags, text, owner), or
its exact one-line refusal, which names the line and the field and never the memory text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.interface import Interface
from dpmem_ref.runtime.memory import MAX_TEXT_CHARS, MemoryBook, MemoryEntry
from tests.runtime_fixtures import AGENT, open_runtime

SECRET = "I have a secret diagnosis."
FIRST = {"id": "m1", "slot": "health", "text": "I take metformin every morning.", "user": "alice", "tags": []}
OWNER = 'the owner (subject) of the item, or "public": true outside every group'


@pytest.fixture(scope="module")
def interface() -> Interface:
    """The example agent's interface: health 1-3, food 4-6, finance 7-9, schedule 10-11;
    diabetes protects 1-6, debt 4-9 (10 and 11 are outside every group)."""
    runtime = open_runtime(AGENT, None, "memory:")
    served = runtime.interface
    runtime.close()
    return served


def _untagged(slot: str, text: str) -> frozenset[str]:
    return frozenset()


def _load(interface: Interface, tmp_path: Path, *lines: str) -> MemoryBook:
    path = tmp_path / "memory.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return MemoryBook.load(interface, _untagged, path)


def _line(**fields: object) -> str:
    return json.dumps({"slot": "health", "text": SECRET, "user": "alice", **fields})


def test_accepted_lines_hold_exactly_the_items_they_declare(interface: Interface, tmp_path: Path) -> None:
    longest = "x" * MAX_TEXT_CHARS  # the longest text is accepted
    book = _load(
        interface,
        tmp_path,
        _line(id="given", position=3, tags=["exercise", "medication"]),
        _line(id="long", text=longest),  # no position: the first free one of the slot
        json.dumps({"slot": "schedule", "text": "Shops close at eight.", "public": True}),  # no id: one is generated
    )
    assert book.entries("alice")[1:] == [
        MemoryEntry("long", "health", 1, frozenset(), longest, "alice"),
        MemoryEntry("given", "health", 3, frozenset({"exercise", "medication"}), SECRET, "alice"),
    ]
    [public] = book.entries("anyone")
    assert re.fullmatch(r"[0-9a-f]{16}", public.item_id)  # 8 random bytes, in hex
    assert public == MemoryEntry(public.item_id, "schedule", 10, frozenset(), "Shops close at eight.", None)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f"not JSON: {SECRET}", "memory line 3: expected one JSON object, found 'malformed JSON'"),
        (json.dumps([SECRET]), "memory line 3: expected one JSON object, found 'list'"),
        (
            _line(note=SECRET, Text=1),
            "memory line 3: expected keys among ['id', 'position', 'public', 'slot', 'tags', 'text', 'user'],"
            " found ['Text', 'note']",
        ),
        (_line(public="yes"), "memory line 3.public: expected true or false, found 'str'"),
        (_line(text=5), "memory line 3.text: expected memory text of 1..8192 characters, found 'int'"),
        (
            _line(text="x" * (MAX_TEXT_CHARS + 1)),
            "memory line 3.text: expected memory text of 1..8192 characters, found '8193 characters'",
        ),
        (
            _line(tags=["exercise", "debt-repayment", "busy-evenings"]),
            "memory line 3.tags: expected tags the vocabulary of slot health reads, found '2 other tag(s)'",
        ),
        (_line(position="2"), "memory line 3.position: expected a position of the slot, found '2'"),
        (_line(position=SECRET), "memory line 3.position: expected a position of the slot, found 'str'"),
        (_line(user=None), f"memory line 3.user: expected {OWNER}, found 'no owner'"),
        (_line(public=True), f"memory line 3.user: expected {OWNER}, found 'both an owner and public'"),
        (_line(id="m1"), "memory line 3.id: expected an id not used before, found 'm1'"),
        (_line(position=4), "memory line 3.position: expected a free position of slot health, found 4"),
        (_line(position=1), "memory line 3.position: expected a free position of slot health, found 1"),
        (
            _line(user=None, public=True, position=2),
            "memory line 3.public: expected a public item at a position outside every protected group, found 2",
        ),
    ],
)
def test_a_malformed_line_is_refused_in_one_line_naming_line_and_field(
    interface: Interface, tmp_path: Path, line: str, message: str
) -> None:
    """The line number counts blank lines; the refusal quotes no memory text."""
    with pytest.raises(InputError) as refused:
        _load(interface, tmp_path, json.dumps(FIRST), "", line)
    assert str(refused.value) == message


def test_a_memory_file_that_does_not_exist_yet_loads_an_empty_book(interface: Interface, tmp_path: Path) -> None:
    book = MemoryBook.load(interface, _untagged, tmp_path / "memory.jsonl")
    assert book.path == tmp_path / "memory.jsonl" and book.entries("alice") == []


def test_a_memory_path_that_is_not_a_regular_file_is_refused_naming_the_option(
    interface: Interface, tmp_path: Path
) -> None:
    with pytest.raises(InputError) as refused:
        MemoryBook.load(interface, _untagged, tmp_path)
    message = str(refused.value)  # the long path is cut short, so only its start is exact
    assert message.startswith("--memory: expected a regular JSON lines file, found 'a directory: /")
    assert "\n" not in message


def test_a_memory_file_of_undecodable_bytes_is_refused_without_its_content(
    interface: Interface, tmp_path: Path
) -> None:
    path = tmp_path / "memory.jsonl"
    path.write_bytes(_line(id="m1").encode("utf-8") + b"\n\xff\xfe" + SECRET.encode("utf-8") + b"\n")
    with pytest.raises(InputError) as refused:
        MemoryBook.load(interface, _untagged, path)
    assert str(refused.value) == f"memory file {path}: expected UTF-8 text, found 'undecodable bytes'"
