"""A charged turn is released at its deadline after it starts (`turn_deadline_s`), so the
time the application sees depends on public inputs only; `None` opts out."""

from __future__ import annotations

import time
from pathlib import Path

from tests.runtime_fixtures import copy_example, open_runtime

DINNER = "What should I cook for dinner tonight?"


def test_a_charged_turn_returns_no_earlier_than_the_runtime_deadline(tmp_path: Path) -> None:
    deadline = 0.2  # well above a turn's own time here, and far from the 0.005 s session default
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", turn_deadline_s=deadline)
    assert runtime.turn_deadline_s == deadline
    for app in ("recipes", "finance"):  # every scope's session keeps the runtime's deadline
        started = time.perf_counter()
        turn = runtime.turn("alice", app, "i", DINNER)
        assert turn.route == "affordable-dinner" and time.perf_counter() - started >= deadline
    runtime.close()
