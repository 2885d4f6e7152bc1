"""One load per served turn: an `AgentRuntime.turn` loads its scope's ledger session exactly
once (the retry lookup, routing and planning read that one snapshot), whatever the turn is:
routed and charged, no match, a first turn with an idempotency key, its retry in this process
or after a restart. Counted on the real SQLite session (a counting wrapper around its `load`);
the charges still re-check C5 in the store's transaction, so the ledgers stay exact."""

from __future__ import annotations

import collections
from fractions import Fraction
from pathlib import Path

from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.scopes import ScopeKey
from tests.ledger_fixtures import count_loads  # noqa: F401  (the `loads` fixture)
from tests.runtime_fixtures import charged, copy_example, open_runtime

DINNER = "What should I make for dinner?"  # affordable-dinner: charges debt and diabetes
NO_MATCH = "tell me a joke"


def test_each_agent_turn_loads_its_scope_once(tmp_path: Path, loads: collections.Counter[SessionKey]) -> None:
    agent, memory = copy_example(tmp_path)
    url = f"sqlite:///{tmp_path / 'ledgers.db'}"
    scope = ScopeKey.of_app("alice", "recipes", 0).session_key
    runtime = open_runtime(agent, memory, url)
    turns = [(DINNER, None), (DINNER, None), (NO_MATCH, None), (DINNER, "order-1"), (DINNER, "order-1")]
    for query, turn_id in turns:
        loads.clear()
        runtime.turn("alice", "recipes", "i", query, turn_id=turn_id)
        assert dict(loads) == {scope: 1}, (query, turn_id)
    spent = charged(runtime, "alice", "recipes")
    runtime.close()
    restarted = open_runtime(agent, memory, url)  # the retry finds the turn in the store's rows
    loads.clear()
    retried = restarted.turn("alice", "recipes", "j", DINNER, turn_id="order-1")
    assert retried.retried and dict(loads) == {scope: 1}
    assert charged(restarted, "alice", "recipes") == spent  # no new charge
    share = restarted.share("recipes")
    assert {a: Fraction(v) for a, v in retried.remaining.items()} == {a: share[a] - spent[a] for a in share}
    restarted.close()
