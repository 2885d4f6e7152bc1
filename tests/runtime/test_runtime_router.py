"""The free-text router and one source of truth for the auditor.

- keyword rules route, the threshold holds, no match releases the generic view of every
  slot, reads no memory and charges nothing;
- the router is public (C4): its decision is a function of the query text and history
  only, the same for any memory;
- the exact auditor audits the very Interface object the runtime serves, and its worst
  case over the catalogue bounds the exact loss of the transcript the router produced.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import mpmath

from dpmem_ref.analysis import replay_transcript, worst_case_loss
from dpmem_ref.audit.check import check_interface
from dpmem_ref.core.policy import EMPTY_ITEM
from dpmem_ref.runtime.router import FreeTextRouter, Route
from tests.runtime_fixtures import as_fractions, copy_example, open_runtime

FREE_TEXT = [
    "What should I cook for dinner tonight?",
    "Any advice before my doctor check-up?",
    "Budget tips please",
    "Plan my weeknight evenings",
    "What is the capital of France?",
    "Any cheap meal idea?",
]


def test_keywords_threshold_and_no_match(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    router = runtime.router
    assert router.route("What should I cook for DINNER?") == Route("affordable-dinner", Fraction(1))
    zero = (Fraction(0), 0)
    # A keyword hit scores exactly 1 whatever the number of hits (which only breaks ties).
    assert router.scores("an affordable dinner meal") == {
        "affordable-dinner": (Fraction(1), 2),
        "checkup-reminder": zero,
        "budget-review": zero,
        "weeknight-plan": zero,
    }
    assert router.route("my doctor appointment").query == "checkup-reminder"
    assert router.route("What is the capital of France?").query is None
    assert router.route("dinnerware shopping").query is None  # whole words only
    before = as_fractions(runtime.remaining("alice", "recipes"))
    turn = runtime.turn("alice", "recipes", "i", "What is the capital of France?")
    generic = {v.slot: v.generic for v in runtime.interface.vocabularies}
    assert turn.route is None and dict(turn.views) == generic and turn.control is None
    assert as_fractions(turn.remaining) == before  # no charge
    scoped, _ = runtime._scope("alice", "recipes")  # noqa: SLF001
    assert scoped.load().releases == ()  # nothing drawn, nothing recorded
    runtime.close()


def test_router_reads_public_inputs_only(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    full = open_runtime(agent, memory, "memory:")
    empty = open_runtime(agent, None, "memory:")
    assert FreeTextRouter.reads == ("query_text", "history") and not FreeTextRouter.reads_private
    for text in FREE_TEXT:
        assert full.router.route(text) == empty.router.route(text)  # memory cannot move it
        assert full.turn("alice", "recipes", "i", text).route == empty.turn("alice", "recipes", "i", text).route


def test_auditor_audits_the_served_interface(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", user_caps=False)
    served = runtime.interface
    assert served is runtime.agent.loaded.interface  # one object: loaded once, served, audited
    assert check_interface(served).ok  # the static check (C1-C6, Delta proved) of that object
    for text in FREE_TEXT * 2:
        runtime.turn("alice", "recipes", "i", text)
    scoped, _ = runtime._scope("alice", "recipes")  # noqa: SLF001
    history = scoped.load().history  # the transcript the router's choices produced
    assert {r.query for r in history} <= {q.name for q in served.queries}
    store = runtime.memory.store("alice")
    group = served.policy.attribute("diabetes").group
    neighbour = store.replace({p: EMPTY_ITEM for p in group})  # M ~_diabetes M'
    worst = worst_case_loss(served, store, neighbour, horizon=len(history))
    assert worst.holds(Fraction(2))
    served_a = replay_transcript(served, store, history)
    served_b = replay_transcript(served, neighbour, history)
    loss = abs(served_a.log_probability - served_b.log_probability)
    assert loss <= worst.worst.upper + mpmath.mpf("1e-30")  # covered by the catalogue worst case
    assert loss > 0  # the transcript does depend on memory (the check is not vacuous)
