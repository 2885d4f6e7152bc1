"""Reuse in front of a real agent: an interface with [[reuse]] rules served by the runtime over a
durable ledger re-serves the released view at no charge, the answer's control says "reused", and
what the application reads of its budget stands still (docs/reuse.md)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.ledger.codecs import fraction_to_text
from tests.runtime_fixtures import charged, copy_example, open_runtime

SHARES = {"diabetes": Fraction(2), "debt": Fraction(1)}  # recipes' share in examples/agent/assistant.toml
REUSE = """
[[reuse]]
slot = "food"
queries = ["affordable-dinner"]
refresh_after = 3
"""


@pytest.mark.parametrize("reuse", [False, True])
def test_a_reused_view_is_served_free_and_said_so(reuse: bool, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    if reuse:
        interface = tmp_path / "interface.toml"
        interface.write_text(interface.read_text() + REUSE)
    runtime = open_runtime(agent, memory, f"sqlite:///{tmp_path / 'l.db'}")
    query = "Can you suggest an affordable dinner for tonight?"
    turns = [runtime.turn("alice", "recipes", "i", query) for _ in range(3)]
    assert [t.route for t in turns] == ["affordable-dinner"] * 3
    kinds = [dict(t.control)["food"] for t in turns]
    if reuse:
        # The first turn selects (charged); the next two re-serve its view, for free.
        assert kinds == ["released", "reused", "reused"]
        assert turns[1].views["food"] == turns[2].views["food"] == turns[0].views["food"]
    else:
        assert "reused" not in kinds
    # What the application reads is its share minus the exact sum of its charged release rows.
    spent = charged(runtime, "alice", "recipes")
    assert turns[-1].remaining == {a: fraction_to_text(SHARES[a] - spent[a]) for a in SHARES}
    if reuse:  # a reused turn adds nothing
        assert turns[1].remaining == turns[0].remaining == turns[2].remaining
    runtime.close()
