"""The served turn's worker pool: the kernel turns of `dpmem serve` run on `--workers N` threads
(default 2 x CPU cores, at least 2), named in the log at start-up, and the release deadline is
waited by the HTTP layer alone: a runtime that waits its own deadline (a worker thread held for
it on every turn) is refused. In process: the real runtime and ASGI app."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="extra serve not installed")

from dpmem_ref.core.errors import InputError  # noqa: E402
from dpmem_ref.runtime import AgentRuntime  # noqa: E402
from dpmem_ref.serve import turns as turns_module  # noqa: E402
from dpmem_ref.serve.app import create_app  # noqa: E402
from dpmem_ref.serve.keys import load_keys  # noqa: E402
from dpmem_ref.serve.turns import TurnService  # noqa: E402
from tests.serve.live import agent_of, marked_memory, write_keys  # noqa: E402


def _runtime(tmp_path: Path, **options: object) -> tuple[AgentRuntime, Path]:
    keys_path, _ = write_keys(tmp_path)
    memory, _ = marked_memory(tmp_path)
    runtime = AgentRuntime.open(str(agent_of(keys_path)), memory=str(memory), store_url="memory:", seed=0, **options)  # type: ignore[arg-type]
    return runtime, keys_path


@pytest.mark.parametrize("held", [None, 0.05, 0.2])
def test_a_runtime_that_waits_its_own_release_deadline_is_not_served(tmp_path: Path, held: float | None) -> None:
    options = {} if held is None else {"turn_deadline_s": held}  # None: the runtime's default
    runtime, keys_path = _runtime(tmp_path, **options)
    try:
        assert runtime.turn_deadline_s is not None
        with pytest.raises(InputError, match=r"^turn_deadline_s: expected None \(the served turn waits") as refused:
            create_app(runtime, load_keys(keys_path))
        assert refused.value.found == runtime.turn_deadline_s
    finally:
        runtime.close()


def test_a_runtime_without_its_own_deadline_is_served_on_the_pool_asked_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, keys_path = _runtime(tmp_path, turn_deadline_s=None)
    try:
        with caplog.at_level(logging.INFO, logger="dpmem.serve"):
            create_app(runtime, load_keys(keys_path), workers=3)
        assert [r.getMessage() for r in caplog.records if r.name == "dpmem.serve"] == [
            "kernel turns on 3 worker threads"
        ]
    finally:
        runtime.close()


class _NoDeadline:
    """The part of a runtime TurnService reads before a turn: none (no `turn_deadline_s`)."""


@pytest.mark.parametrize(("cores", "expected"), [(None, 2), (1, 2), (2, 4), (3, 6), (16, 32)])
def test_the_default_pool_is_twice_the_cores_and_at_least_two(
    monkeypatch: pytest.MonkeyPatch, cores: int | None, expected: int
) -> None:
    monkeypatch.setattr(turns_module.os, "cpu_count", lambda: cores)
    service = TurnService(_NoDeadline())
    assert service.workers == expected
    assert service._pool.total_tokens == expected  # noqa: SLF001  # the limiter the turns wait on
    asked = TurnService(_NoDeadline(), workers=5)
    assert asked.workers == 5 and asked._pool.total_tokens == 5  # noqa: SLF001


def test_at_most_the_pool_size_of_kernel_turns_run_at_once() -> None:
    """Two workers, six turns of six scopes: never more than two in the kernel at once, and two
    do run together (the pool is a bound, not a serialisation). Each turn waits, for a while, for
    a third to join it: with a pool of two none can, so each pair leaves when its wait ends."""
    import threading

    class Counting:
        turn_deadline_s = None

        def __init__(self) -> None:
            self.inside = 0
            self.most = 0
            self.changed = threading.Condition()

        def turn(self, user: str, app: str, interaction: str, query: str, respond: bool, turn_id: str | None) -> str:
            with self.changed:
                self.inside += 1
                self.most = max(self.most, self.inside)
                self.changed.notify_all()
                self.changed.wait_for(lambda: self.inside >= 3, timeout=0.3)
                self.inside -= 1
            return query

        def view_texts(self, done: str) -> list[tuple[str, str]]:
            return []

    runtime = Counting()
    service = TurnService(runtime, deadline_s=None, workers=2)

    async def all_turns() -> list[object]:
        return await asyncio.gather(*(service.turn(f"u{n}", "app", "i", f"q{n}", respond=False) for n in range(6)))

    done = asyncio.run(all_turns())
    assert [turn for turn, _, _ in done] == [f"q{n}" for n in range(6)]  # type: ignore[misc]
    assert runtime.most == 2
