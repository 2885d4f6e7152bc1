"""Record/replay: the public accounting is a function of the public prefix only.

M and M' run through the kernel's own `run_turn` on one identical random tape (the same
seeded integer stream) take identical routes, charge sets, epsilons, ledger updates and
fallback decisions; only the EM draws may differ. With a fixed router and a fixed query
sequence that holds on every turn; with adaptive routers and strategies it holds for as
long as the released histories agree, and at every prefix M released, M' planned at that
same prefix has the same public shape. Replaying a recorded tape reproduces M's run
exactly (same transcript, same ledgers, same number of draws).
"""

from __future__ import annotations

import random

import attrs
from hypothesis import given, note
from hypothesis import strategies as st

from dpmem_ref import InterfaceState, RecordingSource, SeededRandomSource, TapeSource, plan_slot, run_turn
from dpmem_ref.core.transcript import PublicPrefix
from dpmem_ref.parts.routers import FixedRouter
from proofs_as_tests.strategies import QueryStrategy, cases

TURNS = 8


def _public(record):
    return (record.query, record.views, record.control, record.response)


def play(case, strategy, source, seed, turns=TURNS, store=None):
    store = case.store_a if store is None else store
    state = InterfaceState.initial(case.interface)
    rng = random.Random(seed)
    results = []
    channel = attrs.evolve(case.channel)  # a fresh generator per run
    for _ in range(turns):
        name = strategy.choose([_public(r) for r in state.history], rng)
        result = run_turn(case.interface, state, name, store, source, channel=channel)
        results.append(result)
        state = result.state
    return results


def slot_accounting(plan):
    return (plan.slot, plan.charge_set, plan.epsilon, plan.admitted, plan.ledgers_after)


def accounting(result):
    return (
        tuple(p.slot for p in result.plans),
        tuple(p.charge_set for p in result.plans),
        tuple(p.epsilon for p in result.plans),
        tuple(p.admitted for p in result.plans),
        tuple(p.ledgers_after for p in result.plans),
        result.state.ledgers,
    )


@given(cases(adaptive=False), st.integers(0, 2**32 - 1))
def test_fixed_routes_identical_accounting_on_one_tape(case, seed):
    note(repr(case))
    sequence = QueryStrategy(kind="fixed", sequence=case.strategy.sequence)
    case = attrs.evolve(case, interface=attrs.evolve(case.interface, router=FixedRouter()))
    run_a = play(case, sequence, SeededRandomSource(seed), seed)
    run_b = play(case, sequence, SeededRandomSource(seed), seed, store=case.store_b)
    for ra, rb in zip(run_a, run_b, strict=True):
        assert accounting(ra) == accounting(rb)
        assert ra.record.admitted == rb.record.admitted
        assert ra.record.charges == rb.record.charges
        assert tuple(s for s, _ in ra.record.views) == tuple(s for s, _ in rb.record.views)


@given(cases(), st.integers(0, 2**32 - 1))
def test_adaptive_runs_agree_until_views_differ(case, seed):
    note(repr(case))
    run_a = play(case, case.strategy, SeededRandomSource(seed), seed)
    run_b = play(case, case.strategy, SeededRandomSource(seed), seed, store=case.store_b)
    for ra, rb in zip(run_a, run_b, strict=True):
        assert ra.record.query == rb.record.query
        # Slot by slot up to the first differing release: a public router may narrow the
        # later reads of the same turn on what was released (C4 allows it), so the plans
        # after that slot may differ.
        for pa, pb, va, vb in zip(ra.plans, rb.plans, ra.record.views, rb.record.views, strict=True):
            assert slot_accounting(pa) == slot_accounting(pb)
            if va != vb:
                break
        if ra.record.views != rb.record.views or ra.record.response != rb.record.response:
            break  # histories diverged through an EM draw: the adaptive future may differ
        assert accounting(ra) == accounting(rb)
        assert ra.record.control == rb.record.control
    # At every prefix M actually released, M' plans the same public operation.
    state = InterfaceState.initial(case.interface)
    for ra in run_a:
        query = case.interface.query(ra.record.query)
        ledgers = state.ledgers
        released = ()
        for plan in ra.plans:
            prefix = PublicPrefix(history=state.history, query=query, released=released)
            twin = plan_slot(case.interface, ledgers, prefix, plan.slot, case.store_b)
            assert twin.public_shape == plan.public_shape
            assert twin.ledgers_after == plan.ledgers_after
            ledgers = plan.ledgers_after
            released = released + ((plan.slot, dict(ra.record.views)[plan.slot]),)
        state = ra.state


@given(cases(), st.integers(0, 2**32 - 1))
def test_same_tape_replays_identically(case, seed):
    note(repr(case))
    recorder = RecordingSource(SeededRandomSource(seed))
    first = play(case, case.strategy, recorder, seed)
    tape = TapeSource([value for _, value in recorder.tape])
    second = play(case, case.strategy, tape, seed)
    assert tape.consumed == len(recorder.tape)
    for ra, rb in zip(first, second, strict=True):
        assert ra.record == rb.record
        assert ra.state == rb.state
