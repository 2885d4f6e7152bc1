"""The owner's listing of one subject's scopes (`AgentRuntime.ledgers`): one row per runtime
scope of the database, exactly; sessions that are not runtime scopes and the current epoch's
stored per-user scope are left out, and the per-user row is the exact sum of this epoch's
application scopes, under the per-user caps, with the guarantee over epochs beside it."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from dpmem_ref.ledger.fingerprint import interface_fingerprint
from tests.runtime_fixtures import copy_example, open_runtime

OVER_EPOCHS = {
    "epochs": 1,
    "fresh_budget_epochs": [],
    "per_application": {"debt": "2/1", "diabetes": "2/1"},
    "per_user": {"debt": "3/1", "diabetes": "3/1"},
}


def test_the_listing_is_exact_and_sums_this_epochs_applications(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    fingerprint = interface_fingerprint(runtime.interface)
    assert runtime.user_caps is not None
    # Listed before the runtime's scopes (by interaction id): a `dpmem run` session of the same
    # database, not a runtime scope; after them, the per-user scope of a database written
    # before shares, which this epoch's sum below replaces.
    runtime.ledger_store.open_session("alice", "a-run", runtime.interface.caps, fingerprint=fingerprint)
    runtime.ledger_store.open_session("alice", "e0:user", runtime.user_caps, fingerprint=fingerprint)
    runtime.turn("alice", "recipes", "i", "What should I cook for dinner tonight?")
    runtime.turn("alice", "finance", "i", "Budget tips please")
    assert runtime.ledgers("alice") == [
        {
            "scope": {"user": "alice", "app": "finance", "epoch": 0},
            "ledgers": {"debt": "1/2", "diabetes": "0/1"},
            "caps": {"debt": "2/1", "diabetes": "1/1"},
        },
        {
            "scope": {"user": "alice", "app": "recipes", "epoch": 0},
            "ledgers": {"debt": "1/1", "diabetes": "1/2"},
            "caps": {"debt": "1/1", "diabetes": "2/1"},
        },
        {
            "scope": {"user": "alice", "app": None, "epoch": 0, "over_epochs": OVER_EPOCHS},
            "ledgers": {"debt": "3/2", "diabetes": "1/2"},
            "caps": {"debt": "3/1", "diabetes": "3/1"},
        },
    ]
    assert runtime.ledgers("bob") == []  # no scope opened: no row, not even a per-user total
    runtime.close()


def test_the_per_user_row_sums_each_attribute_a_scope_holds_from_zero(tmp_path: Path) -> None:
    """A scope of this epoch written by another tool, with an attribute the interface does
    not cap: the per-user row sums exactly what the scopes hold, that attribute from 0."""
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    caps = {**runtime.interface.caps, "weight": Fraction(1)}
    runtime.ledger_store.open_session(
        "alice", "e0:app:notes", caps, fingerprint=interface_fingerprint(runtime.interface)
    )
    (total,) = [row for row in runtime.ledgers("alice") if row["scope"]["app"] is None]
    assert total["ledgers"] == {"debt": "0/1", "diabetes": "0/1", "weight": "0/1"}
    runtime.close()
