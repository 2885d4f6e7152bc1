"""A turn as the application sees it: `AgentTurn.to_json`, one `dpmem chat` output line
(the fields every front door serves). A turn id and whether the turn was a retry appear
only when the caller sent a turn id."""

from __future__ import annotations

import json
from pathlib import Path

from dpmem_ref.runtime.turns import AgentTurn
from tests.runtime_fixtures import copy_example, open_runtime

GENERIC_VIEWS = {
    "health": "health-generic",
    "food": "balanced-meals",
    "finance": "finance-generic",
    "schedule": "schedule-generic",
}
GENERIC_TEXTS = [
    "Give general, widely applicable health information.",
    "Suggest balanced, everyday meals.",
    "Give general, widely applicable money tips.",
    "Assume an ordinary weekday schedule.",
]


def test_a_matched_turn_with_a_turn_id_names_it_and_whether_it_was_retried() -> None:
    turn = AgentTurn(
        query="Budget tips please",
        route="budget-review",
        response="Keep it cheap.",
        control=[["finance", "released"]],
        remaining={"debt": "3/2", "diabetes": "1/1"},
        interaction="chat-1",
        views={"finance": "strict-budget"},
        turn_id="t-1",
        retried=True,
    )
    assert turn.to_json() == {
        "turn_id": "t-1",
        "retried": True,
        "query": "Budget tips please",
        "route": "budget-review",
        "response": "Keep it cheap.",
        "control": [["finance", "released"]],
        "remaining": {"debt": "3/2", "diabetes": "1/1"},
        "interaction": "chat-1",
        "views": {"finance": "strict-budget"},
    }
    bare = AgentTurn(query="q", route=None, response="", control=None, remaining={})
    assert bare.to_json() == {
        "query": "q",
        "route": None,
        "response": "",
        "control": None,
        "remaining": {},
        "interaction": "",
        "views": {},
    }


def test_served_turns_are_json_lines_with_exact_fields(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")  # the echo channel: the response is the view texts
    no_match = runtime.turn("alice", "finance", "chat-1", "tell me a joke").to_json()
    assert no_match == {
        "query": "tell me a joke",
        "route": None,
        "response": " | ".join(GENERIC_TEXTS),
        "control": None,
        "remaining": {"debt": "2/1", "diabetes": "1/1"},  # finance's share, nothing charged
        "interaction": "chat-1",
        "views": GENERIC_VIEWS,
    }
    first = runtime.turn("alice", "finance", "chat-1", "Budget tips please", turn_id="t-1")
    again = runtime.turn("alice", "finance", "chat-2", "Budget tips please", turn_id="t-1")
    common = {
        "query": "Budget tips please",
        "route": "budget-review",
        "response": first.response,
        "control": first.control,
        "remaining": {"debt": "3/2", "diabetes": "1/1"},  # one charge of 1/2 to debt, none on the retry
        "views": dict(first.views),
    }
    assert first.to_json() == {"turn_id": "t-1", "retried": False, **common, "interaction": "chat-1"}
    assert again.to_json() == {"turn_id": "t-1", "retried": True, **common, "interaction": "chat-2"}
    assert list(first.views) == ["finance"] and first.control[0][0] == "finance"
    assert json.loads(json.dumps(again.to_json())) == again.to_json()  # JSON data as it stands
    runtime.close()
