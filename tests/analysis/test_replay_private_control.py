"""Replay under a control that reads private state (a C6 breach, run leniently as the auditor
does): a transcript recorded under one store is impossible under the other store whenever the
other store's control on that transcript differs from the recorded one, and replays with a
finite probability only when every control agrees. The control is part of the transcript the
application sees; a replay that ignored it would hide exactly the leak the breach causes."""

from __future__ import annotations

import mpmath
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.analysis.replay import replay_transcript
from dpmem_ref.core.policy import Store
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.broken import RawEvidenceControl, TopScoreControl
from dpmem_ref.turn import InterfaceState, begin_turn, run_interaction
from tests.kernel_fixtures import two_attribute_interface

CONTROLS = {"raw-evidence": RawEvidenceControl(), "top-score": TopScoreControl()}


def _controls_under(interface: Interface, store: Store, turns: tuple[object, ...]) -> list[object] | None:
    """The control the store's plans give on the recorded views, turn by turn; None when the
    store cannot release those views at all."""
    state = InterfaceState.initial(interface)
    found = []
    for turn in turns:
        cursor = begin_turn(interface, state, interface.query(turn.query), store, strict=False)  # type: ignore[attr-defined]
        for slot, view in turn.views:  # type: ignore[attr-defined]
            if cursor.done or cursor.plan().slot != slot or cursor.plan().distribution.log_probability(view) == mpmath.mpf("-inf"):
                return None
            cursor = cursor.release(view)
        control = cursor.control()
        found.append(control)
        state, _ = cursor.finish(response=turn.response, control=turn.control)  # type: ignore[attr-defined]
    return found


@given(
    control=st.sampled_from(sorted(CONTROLS)),
    seed=st.integers(0, 2**16),
    length=st.integers(1, 4),
    record_under_prime=st.booleans(),
)
def test_a_transcript_whose_control_differs_under_the_other_store_is_impossible_there(
    control: str, seed: int, length: int, record_under_prime: bool
) -> None:
    interface, store, store_prime = two_attribute_interface(control=CONTROLS[control])
    recorded_on, other = (store_prime, store) if record_under_prime else (store, store_prime)
    state = run_interaction(interface, ["q"] * length, recorded_on, SeededRandomSource(seed), strict=False)
    turns = state.history
    assert replay_transcript(interface, recorded_on, turns, strict=False).log_probability > mpmath.mpf("-inf")
    replayed = replay_transcript(interface, other, turns, strict=False).log_probability
    controls = _controls_under(interface, other, turns)
    agrees = controls is not None and controls == [t.control for t in turns]
    if agrees:
        assert replayed > mpmath.mpf("-inf")
    else:
        assert replayed == mpmath.mpf("-inf")


def test_the_control_alone_separates_the_stores() -> None:
    """The raw-evidence control on the first turn: 1 under M (its read item carries evidence),
    0 under M': the same released views, impossible under the other store."""
    interface, store, store_prime = two_attribute_interface(control=RawEvidenceControl())
    for seed in range(20):
        turns = run_interaction(interface, ["q"], store, SeededRandomSource(seed), strict=False).history
        assert turns[0].control == 1
        assert replay_transcript(interface, store_prime, turns, strict=False).log_probability == mpmath.mpf("-inf")
