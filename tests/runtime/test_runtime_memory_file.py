"""The memory file a runtime rewrites on every change: its exact bytes (one JSON object per
item, keys sorted, in owner, position, id order), ASCII (JSON escapes), mode 0600, and
an atomic replace from a hidden temporary beside it; a failed write changes nothing."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest

from tests.runtime_fixtures import copy_example, open_runtime

PUBLIC = {"id": "p1", "slot": "schedule", "text": "The office closes at six.", "public": True}
TEMPORARY = re.compile(r"\.memory-[^/]+\.jsonl")


def test_every_change_rewrites_the_exact_file_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, memory = copy_example(tmp_path)
    memory.write_text(memory.read_text() + json.dumps(PUBLIC) + "\n")
    runtime = open_runtime(agent, memory, "memory:")
    replaced: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def recording_replace(source: str, target: Path) -> None:
        replaced.append((Path(source), Path(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", recording_replace)
    bob = runtime.add_memory("bob", "finance", "I owe money on two loans.", tags=["debt-repayment"])
    runtime.update_memory("alice", "m2", "I swim on Fridays.", tags=[])  # given tags, not the tagger's
    runtime.update_memory("bob", "p1", "The office closes at five.")  # a public item: anyone's to change
    runtime.delete_memory("alice", "m5")
    assert memory.read_text() == (
        '{"id": "p1", "position": 11, "public": true, "slot": "schedule", "tags": [], "text": "The office closes at five."}\n'
        '{"id": "m1", "position": 1, "slot": "health", "tags": ["blood-sugar", "medication"], "text": "I take metformin every morning.", "user": "alice"}\n'
        '{"id": "m2", "position": 2, "slot": "health", "tags": [], "text": "I swim on Fridays.", "user": "alice"}\n'
        '{"id": "m3", "position": 4, "slot": "food", "tags": ["blood-sugar", "carb-counting"], "text": "I count carbs at every meal and check my glucose.", "user": "alice"}\n'
        '{"id": "m4", "position": 5, "slot": "food", "tags": ["tight-budget"], "text": "Money is tight when I shop for groceries.", "user": "alice"}\n'
        '{"id": "m6", "position": 10, "slot": "schedule", "tags": ["busy-evenings"], "text": "I work late most evenings.", "user": "alice"}\n'
        f'{{"id": "{bob}", "position": 7, "slot": "finance", "tags": ["debt-repayment"], "text": "I owe money on two loans.", "user": "bob"}}\n'
    )
    assert memory.stat().st_mode & 0o777 == 0o600
    # Each change: one rename onto the file from a hidden temporary in the same folder (the
    # same filesystem, so the rename is atomic), and no temporary left behind.
    assert len(replaced) == 4
    for source, target in replaced:
        assert source.parent == memory.parent and TEMPORARY.fullmatch(source.name) and target == memory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["assistant.toml", "interface.toml", "memory.jsonl"]
    runtime.close()


def test_non_ascii_text_is_written_escaped_and_reads_back(tmp_path: Path) -> None:
    """The file is ASCII whatever the text (JSON escapes), so no locale or encoding alters it."""
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    item = runtime.add_memory("alice", "health", "Crème brûlée spikes my glucose.")
    runtime.close()
    assert memory.read_bytes().isascii()
    assert '"text": "Cr\\u00e8me br\\u00fbl\\u00e9e spikes my glucose."' in memory.read_text()
    again = open_runtime(agent, memory, "memory:")
    assert {e.item_id: e.text for e in again.memory_items("alice")}[item] == "Crème brûlée spikes my glucose."
    again.close()


def test_a_failed_write_changes_nothing_and_reports_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    before_file, before_items = memory.read_bytes(), runtime.memory_items("alice")

    def failing_replace(source: str, target: Path) -> None:
        raise OSError(errno.EIO, "the disk went away")

    def vanished_then_failing_replace(source: str, target: Path) -> None:
        Path(source).unlink()  # the temporary already removed (a cleanup running beside us)
        raise OSError(errno.EIO, "the disk went away")

    for replace in (failing_replace, vanished_then_failing_replace):
        monkeypatch.setattr(os, "replace", replace)
        with pytest.raises(OSError, match="the disk went away") as caught:
            runtime.add_memory("alice", "health", "I take insulin at night.")
        assert caught.value.errno == errno.EIO  # the write's own error, whatever became of the temporary
        assert memory.read_bytes() == before_file and runtime.memory_items("alice") == before_items
        assert sorted(p.name for p in tmp_path.iterdir()) == ["assistant.toml", "interface.toml", "memory.jsonl"]
    runtime.close()
