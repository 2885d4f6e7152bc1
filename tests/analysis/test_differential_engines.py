"""The runner vs the durable session vs the proofs' transcript walker,
on the same random tape, over generated interfaces (multi-slot turns, history routers,
observable controls, online and preallocated budgets, LLM channels).

`run_interaction` (the in-memory kernel) and `DurableSession` (the same turns against a
ledger store, charge-before-release) must release the same transcript and reach the same
ledgers from one `TapeSource`; that transcript must be a leaf of the exact joint
enumeration (`proofs_as_tests/transcripts.py`) with positive probability under the store
it ran on, whose pathwise ledgers L(omega) are the runner's; and `replay_transcript` must
give it the leaf's view-and-control probability.
"""

from __future__ import annotations

import attrs
import mpmath
from hypothesis import event, given, reject, target
from hypothesis import strategies as st

from dpmem_ref.analysis import replay_transcript
from dpmem_ref.ledger import MemoryLedgerStore
from dpmem_ref.mechanism.randomness import TapeExhausted, TapeSource
from dpmem_ref.turn import run_interaction, view_texts
from dpmem_ref.turn.durable import DurableSession
from proofs_as_tests.strategies import Case, QueryStrategy, cases
from proofs_as_tests.strategies.hard import budget_cases
from proofs_as_tests.transcripts import enumerate_joint, log_fraction

TAPE = st.lists(st.integers(0, 2**64 - 1), min_size=96, max_size=96)


@st.composite
def fixed_cases(draw: st.DrawFn) -> tuple[Case, tuple[str, ...]]:
    """A generated case whose strategy plays a fixed query sequence of the horizon's length:
    half from the generators aimed at budget exhaustion (horizons long enough that caps
    run out, so fallbacks lie on the tape's path), half from the general pool."""
    case = draw(st.one_of(budget_cases(max_leaves=300), cases(max_horizon=3, max_leaves=200)))
    names = [q.name for q in case.interface.queries]
    sequence = tuple(draw(st.lists(st.sampled_from(names), min_size=case.horizon, max_size=case.horizon)))
    return attrs.evolve(case, strategy=QueryStrategy(kind="fixed", sequence=sequence)), sequence


@given(fixed_cases(), TAPE)
def test_runner_durable_session_and_walker_agree_on_one_tape(drawn: tuple[Case, tuple[str, ...]], tape: list[int]) -> None:
    case, sequence = drawn
    interface = case.interface
    try:
        state = run_interaction(interface, sequence, case.store_a, TapeSource(tape), channel=attrs.evolve(case.channel))
        session = DurableSession.open(
            interface, MemoryLedgerStore(), "u", "i", case.store_a, TapeSource(tape),
            channel=attrs.evolve(case.channel), turn_deadline_s=None,
        )  # fmt: skip
        for name in sequence:
            session.run_turn(name)
    except TapeExhausted:
        reject()
    assert session.state() == state  # same transcript, same ledgers, same history
    transcript = tuple((r.query, r.views, r.control, r.response) for r in state.history)
    fallbacks = sum(1 for r in state.history for admitted in r.admitted if not admitted)
    target(float(fallbacks), label="fallbacks on the tape's path")
    if fallbacks:
        event("a fallback on the tape's path")
    if any(len(r.views) > 1 for r in state.history):
        event("multi-slot turn on the tape's path")
    leaves = [leaf for leaf in enumerate_joint(case) if leaf.transcript == transcript]
    assert len(leaves) == 1, "the released transcript is one leaf of the exact enumeration"
    (leaf,) = leaves
    assert leaf.logp_a is not None and leaf.logp_a > mpmath.mpf("-inf")
    assert leaf.ledgers_a == state.ledgers  # L(omega) of the walker is the runner's ledger
    # The walker's probability also counts the channel's responses (the strategy is fixed):
    # without them it is the replayed probability of the views and controls.
    with mpmath.workdps(60):
        responses = mpmath.mpf(0)
        prefix: tuple[tuple[str, object, str], ...] = ()
        for record in state.history:
            texts = view_texts(interface, record.views)
            law = dict(case.channel.distribution(interface.query(record.query).text, texts, prefix))
            responses += log_fraction(law[record.response])
            prefix = (*prefix, (record.query, record.control, record.response))
        replayed = replay_transcript(interface, case.store_a, state.history).log_probability
        assert abs(replayed + responses - leaf.logp_a) <= mpmath.mpf(10) ** -40
