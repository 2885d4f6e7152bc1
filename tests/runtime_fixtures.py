"""Shared pieces of the runtime tests (tests/runtime/test_runtime_*.py): the example agent, a
runtime on each ledger backend, exact sums over committed release rows, and an encoder whose
similarities are given."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

import tests.postgres_server as postgres_server
from dpmem_ref.runtime import AgentRuntime

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "agent" / "assistant.toml"
INTERFACE = ROOT / "examples" / "agent" / "interface.toml"
MEMORY = ROOT / "examples" / "agent" / "memory.jsonl"
BACKENDS = ["memory", "sqlite", "postgres"]


def copy_example(tmp_path: Path) -> tuple[Path, Path]:
    """The example agent and interface files, and a writable copy of the memory file."""
    for source in (AGENT, INTERFACE):
        shutil.copy(source, tmp_path / source.name)
    memory = tmp_path / "memory.jsonl"
    shutil.copy(MEMORY, memory)
    return tmp_path / AGENT.name, memory


def store_url(kind: str, tmp_path: Path) -> str:
    if kind == "memory":
        return "memory:"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'ledgers.db'}"
    return postgres_server.new_database()  # a real server (skips if none starts)


def open_runtime(agent: Path, memory: Path | None, url: str, **options: Any) -> AgentRuntime:
    options.setdefault("seed", 0)
    options.setdefault("turn_deadline_s", None)
    return AgentRuntime.open(agent, memory=memory, store_url=url, **options)


def charged(runtime: AgentRuntime, user: str, app: str) -> dict[str, Fraction]:
    """Exact sum of the eps charged per attribute over every committed release row of the
    (user, app) scope (what the ledger must equal)."""
    scoped, _ = runtime._scope(user, app)  # noqa: SLF001  # the scope's own session rows
    total = {a: Fraction(0) for a in runtime.interface.caps}
    for release in scoped.app.load().releases:
        for attribute in release.charge_set:
            total[attribute] += release.epsilon
    return total


def ledger_table(runtime: AgentRuntime, user: str) -> dict[tuple[int, str | None], dict[str, Fraction]]:
    return {
        (row["scope"]["epoch"], row["scope"]["app"]): {a: Fraction(v) for a, v in row["ledgers"].items()}
        for row in runtime.ledgers(user)
    }


def as_fractions(table: Mapping[str, str]) -> dict[str, Fraction]:
    return {a: Fraction(v) for a, v in table.items()}


@attrs.frozen
class FixedEncoder:
    """An encoder whose similarities are given: the same list for any text."""

    similar: tuple[Fraction, ...]
    asked: list[tuple[str, list[str]]] = attrs.field(factory=list)

    def similarities(self, text: str, targets: Sequence[str]) -> list[Fraction]:
        self.asked.append((text, list(targets)))
        return list(self.similar)
