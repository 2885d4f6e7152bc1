"""Tests that kill mutants mutmut found surviving in the kernel's core modules after the
Round-2 restructure (issue 15, point 3; the mutated modules are `[tool.mutmut]
only_mutate` in pyproject.toml, the equivalent survivors `scripts/mutation_equivalents.toml`).

Behaviour through public names where there is one; the exact samplers' integer steps
(`em_sampler`, `mechanism.bucketed_round`) are pinned on scripted tapes, because a mutant
there may keep the law and change only which draws it consumes (a recorded tape no longer
replays). Error messages are asserted whole (HELPERS rules: one line naming the field).
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import mpmath
import pytest

from dpmem_ref import (
    Attribute,
    FunctionScorer,
    InputError,
    Interface,
    InterfaceState,
    Layout,
    MemoryItem,
    OnlineBudget,
    Policy,
    PublicPrefix,
    Query,
    SlotRead,
    Store,
    TapeSource,
    TurnRecord,
    View,
    Vocabulary,
    begin_turn,
    plan_slot,
)
from dpmem_ref.analysis import IMPOSSIBLE, INFINITE, ZERO, Loss
from dpmem_ref.em_sampler import ExactTable, build_table, exp_neg_bounds, residual_accept
from dpmem_ref.exact import require_positive_rational, unit_interval_fraction
from dpmem_ref.mechanism import bucket_proposal, bucketed_round
from dpmem_ref.randomness import TapeExhausted
from dpmem_ref.turn.plan import zero_ledgers

# ---------------------------------------------------------------------------------------
# exact: the range checks and their messages


def test_unit_interval_fraction_accepts_both_ends_and_names_the_field():
    assert unit_interval_fraction("0", "relevance.v") == 0
    assert unit_interval_fraction(1, "relevance.v") == 1
    assert unit_interval_fraction("1/3", "relevance.v") == Fraction(1, 3)
    for bad in ("3/2", 2, "-1/5"):
        with pytest.raises(InputError) as error:
            unit_interval_fraction(bad, "relevance.v")
        assert str(error.value) == f"relevance.v: expected a number in [0, 1], found {bad!r}"
    with pytest.raises(InputError) as error:  # the parse error names the same field
        unit_interval_fraction("half", "relevance.v")
    assert str(error.value) == "relevance.v: expected an integer or an exact rational string like \"2/3\", found 'half'"


def test_require_positive_rational_names_the_type_or_the_value():
    assert require_positive_rational(Fraction(2, 3), "epsilon") == Fraction(2, 3)
    assert require_positive_rational(3, "epsilon") == 3
    for bad, found in ((0.5, "'float'"), (True, "'bool'"), ("1", "'str'")):
        with pytest.raises(InputError) as error:
            require_positive_rational(bad, "epsilon")
        assert str(error.value) == f"epsilon: expected a positive exact rational (Fraction or int), found {found}"
    for bad, found in ((0, "'0'"), (Fraction(-1, 3), "'-1/3'")):
        with pytest.raises(InputError) as error:
            require_positive_rational(bad, "caps.a")
        assert str(error.value) == f"caps.a: expected a positive exact rational, found {found}"


# ---------------------------------------------------------------------------------------
# em_sampler: the exact table, its rounds and the residual Bernoulli, on scripted tapes


def test_build_table_names_a_table_without_a_zero_exponent_or_of_mismatched_lengths():
    for multiplicities, exponents, found in (
        ([1], [Fraction(1)], 1),  # one exponent per outcome, but the smallest is not 0
        ([1, 1], [Fraction(0)], 1),  # the smallest is 0, but one multiplicity too many
        ([], [], 0),
    ):
        with pytest.raises(InputError) as error:
            build_table(multiplicities, exponents)
        assert str(error.value) == f"exact table: expected one exponent per outcome, the smallest 0, found {found}"


@pytest.mark.parametrize(
    ("multiplicities", "table_bits", "chunk_bits", "message"),
    [
        ([1, 1], 2, 1, "table_bits: expected room for 2 slots per outcome, at most 64, found 2"),  # 2 n = 2**bits
        ([1], 65, 1, "table_bits: expected room for 2 slots per outcome, at most 64, found 65"),
        ([1], 4, 0, "chunk_bits: expected 1..64, found 0"),
        ([1], 4, 65, "chunk_bits: expected 1..64, found 65"),
        ([100], 4, 1, "table_bits: expected a table with room for every multiplicity, found 4"),  # 100 > 15 - 2
    ],
)
def test_build_table_names_a_table_that_cannot_hold_its_outcomes(multiplicities, table_bits, chunk_bits, message):
    with pytest.raises(InputError) as error:
        build_table(multiplicities, [Fraction(0)] * len(multiplicities), table_bits, chunk_bits)
    assert str(error.value) == message


def test_build_table_accepts_the_tightest_and_widest_settings():
    # 3 outcomes in 2**3 slots (2 n < 8), capacity 8 - 2 - 3 = 3: exactly scale 1, a slot each.
    tight = build_table([1, 1, 1], [Fraction(0)] * 3, table_bits=3, chunk_bits=1)
    assert (tight.scale, tight.sure, tight.ends, tight.bound, tight.chunk_bits) == (1, (1, 1, 1), (1, 2, 3), 7, 1)
    widest = build_table([1, 2], [Fraction(0), Fraction(1)], table_bits=64, chunk_bits=64)
    assert widest.bound == (1 << 64) - 1 and widest.chunk_bits == 64
    assert widest.sure == (widest.scale, 7819263343891484822)  # floor(2 * scale * exp(-1)), exactly
    assert widest.ends == (widest.scale, widest.scale + 7819263343891484822 + 1) and widest.ends[1] <= widest.bound - 2


# Weights exp(-1/2) and 1 on a 4-bit table: T = 7 exp(-1/2) = 4.2457... and 7, so outcome 0
# owns sure slots 0-3 and residual slot 4 (Bernoulli(0.2457...)), outcome 1 slots 5-11.
HALF = build_table([1, 1], [Fraction(1, 2), Fraction(0)], table_bits=4, chunk_bits=1)


def test_a_small_table_lays_out_sure_and_residual_slots():
    assert (HALF.scale, HALF.sure, HALF.ends, HALF.bound) == (7, (4, 7), (5, 12), 15)
    # Sure and empty slots draw nothing more: an empty tape decides them.
    assert [HALF.resolve(slot, TapeSource([])) for slot in range(15) if slot != 4] == [0] * 4 + [1] * 7 + [None] * 3


def test_the_residual_slot_of_the_first_outcome_draws_its_bernoulli():
    # U's first bit 1: U >= 1/2 > 0.2457..., rejected after one draw.
    source = TapeSource([1])
    assert HALF.resolve(4, source) is None and source.consumed == 1
    # U's bits 0, 0, 0: U < 1/8 < 0.2457..., accepted after three (1/4 does not yet decide).
    source = TapeSource([0, 0, 0])
    assert HALF.resolve(4, source) == 0 and source.consumed == 3


def test_a_floor_next_to_an_integer_is_refined_until_it_is_exact():
    # T = 2 exp(-2**-40) = 2 - 2**-39...: the first brackets (18, then 36 bits) straddle 2,
    # the third (72 bits) does not: floor 1, so outcome 1 owns one sure slot and a residual.
    table = build_table([1, 1], [Fraction(0), Fraction(1, 1 << 40)], table_bits=3)
    assert (table.scale, table.sure, table.ends) == (2, (2, 1), (2, 4))


def _residual_table(exponent: Fraction) -> ExactTable:
    """One outcome with T = exp(-exponent) < 1: no sure slot, a residual Bernoulli(T)."""
    return ExactTable((1,), (exponent,), scale=1, sure=(0,), ends=(1,), bound=2, chunk_bits=1)


def test_residual_accept_decides_on_a_bracket_end_without_another_draw():
    # 2**18 exp(-x) brackets to [2**17, 2**17 + 1] at the first step (k = 1 bit of U, 18 bits
    # of T): the interval U in [0, 1/2) ends exactly at the lower end, so every U in it is
    # below T: accept on one draw.
    accept_on_end = Fraction(34657, 50000)
    assert exp_neg_bounds(accept_on_end, 18) == (1 << 17, (1 << 17) + 1)
    source = TapeSource([0])
    assert residual_accept(_residual_table(accept_on_end), 0, source, 1) is True and source.consumed == 1
    # [2**17 - 1, 2**17]: U in [1/2, 1) starts exactly at the upper end: reject on one draw.
    reject_on_end = Fraction(13863, 20000)
    assert exp_neg_bounds(reject_on_end, 18) == ((1 << 17) - 1, 1 << 17)
    source = TapeSource([1])
    assert residual_accept(_residual_table(reject_on_end), 0, source, 1) is False and source.consumed == 1


# ---------------------------------------------------------------------------------------
# mechanism: one round of the bucketed (score-adaptive) proposal


def test_bucketed_round_draws_a_member_only_in_a_shared_bucket():
    # gaps 0 and 3: buckets floor(4 gap) = 0 and 12, one view each. Slot 0 of the table is
    # bucket 0; its only view is taken without a draw; Bernoulli(exp(-0)) draws once.
    lone = (Fraction(0), Fraction(3))
    source = TapeSource([0, 0])
    assert bucketed_round(bucket_proposal(lone), lone, source) == 0 and source.consumed == 2
    # gaps 0, 0, 3: views 0 and 1 share bucket 0, a uniform draw below 2 picks one.
    shared = (Fraction(0), Fraction(0), Fraction(3))
    for pick in (0, 1):
        source = TapeSource([0, pick, 0])
        assert bucketed_round(bucket_proposal(shared), shared, source) == pick and source.consumed == 3
    with pytest.raises(TapeExhausted):
        bucketed_round(bucket_proposal(shared), shared, TapeSource([0, 1]))


# ---------------------------------------------------------------------------------------
# analysis.loss: the witness order, messages, hashing and repr


def test_equal_kinds_never_rank_above_each_other():
    one = Loss.of_fractions(Fraction(1), Fraction(1))
    for loss in (IMPOSSIBLE, INFINITE, ZERO, one):
        assert not loss.ranks_above(loss)
    assert not INFINITE.ranks_above(Loss(INFINITE.kind)) and not IMPOSSIBLE.ranks_above(Loss(IMPOSSIBLE.kind))


def test_only_a_finite_loss_has_ends_or_an_interval():
    for loss in (IMPOSSIBLE, INFINITE):
        with pytest.raises(ValueError) as error:
            loss.ends()
        assert str(error.value) == "only a finite loss has exact ends"
        with pytest.raises(ValueError) as error:
            loss.to_interval()
        assert str(error.value) == "only a finite loss is an interval"
        with pytest.raises(ValueError) as error:
            loss.neg()
        assert str(error.value) == "only a finite loss has a negation"
    for ends in (["-inf", 0], [0, "inf"]):
        with pytest.raises(ValueError) as error:
            Loss.interval(mpmath.iv.mpf(ends))
        assert str(error.value) == "a finite loss needs finite interval ends"


def test_loss_hash_follows_the_value():
    losses = [IMPOSSIBLE, INFINITE, ZERO] + [Loss.of_fractions(Fraction(k, 7), Fraction(k, 5)) for k in range(1, 6)]
    assert hash(Loss.of_fractions(Fraction(1, 7), Fraction(1, 5))) == hash(losses[3])
    # Distinct values spread over distinct hashes (integers and tuples of integers hash
    # deterministically): a dict of the engine's losses does not degrade to one bucket.
    assert len({hash(loss) for loss in losses}) == len(losses)


def test_a_finite_loss_prints_both_ends_to_twelve_digits():
    assert repr(Loss.of_fractions(Fraction(1, 3), Fraction(2, 3))) == "Loss([0.333333333333, 0.666666666667])"
    assert repr(Loss.of_fractions(Fraction(-1, 7), Fraction(1, 7))) == "Loss([-0.142857142857, 0.142857142857])"
    assert (repr(ZERO), repr(IMPOSSIBLE), repr(INFINITE)) == ("Loss(0)", "Loss(impossible)", "Loss(inf)")


# ---------------------------------------------------------------------------------------
# turn: plan_slot's inputs, zero ledgers, rebasing a cursor

LAYOUT = Layout(("g", "g", "g", "h"))
POLICY = Policy(
    LAYOUT,
    (Attribute("a", frozenset({1, 2}), Fraction(1)), Attribute("b", frozenset({2, 3}), Fraction(2))),
)
STORE = Store.from_mapping(LAYOUT, {i: MemoryItem(frozenset({t}), t) for i, t in enumerate("xyzw", start=1)}, "M")


class _PrefixRouter:
    """A public router (C4) whose read of slot g narrows with the prefix: position 1 alone
    after one turn of history, positions {1, 2} once a view was released this turn."""

    name = "prefix-narrowing"
    violates = None
    reads_history = True
    reads_released_views = True

    def active_slots(self, query, history):
        return tuple(read.slot for read in query.reads)

    def read(self, prefix, slot):
        read = prefix.query.read_for(slot)
        if prefix.history:
            return attrs.evolve(read, positions=frozenset({1}))
        if prefix.released:
            return attrs.evolve(read, positions=frozenset({1, 2}))
        return read

    def state_key(self, history):
        return len(history)


def _interface(router=None) -> Interface:
    interface = Interface(
        policy=POLICY,
        vocabularies=(
            Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen"),
            Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
        ),
        queries=(Query("q", "q", (SlotRead("g", frozenset({1, 3})),)),),
        scorer=FunctionScorer(lambda relevance, vocab, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=OnlineBudget(K=2),
    )
    return interface if router is None else attrs.evolve(interface, router=router)


def test_zero_ledgers_are_exact_zeros_in_policy_order():
    assert zero_ledgers(_interface()) == (Fraction(0), Fraction(0))
    assert InterfaceState.initial(_interface()).ledgers == zero_ledgers(_interface())


def test_plan_slot_names_a_ledger_vector_of_the_wrong_length():
    interface = _interface()
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    with pytest.raises(InputError) as error:
        plan_slot(interface, (Fraction(0),), prefix, "g", STORE)
    assert str(error.value) == "ledgers: expected 2 values, one per attribute in policy order, found 1"


def test_plan_slot_routes_on_the_history_and_the_released_views():
    interface = _interface(_PrefixRouter())
    query = interface.query("q")
    ledgers = zero_ledgers(interface)
    record = TurnRecord("q", (("g", "g.v1"),), None, "", (True,), (("g", frozenset({"a", "b"}), Fraction(1, 2)),))
    fresh = plan_slot(interface, ledgers, PublicPrefix((), query, ()), "g", STORE)
    after_history = plan_slot(interface, ledgers, PublicPrefix((record,), query, ()), "g", STORE)
    after_release = plan_slot(interface, ledgers, PublicPrefix((), query, (("h", "h.v1"),)), "g", STORE)
    assert fresh.read.positions == frozenset({1, 3}) and fresh.charge_set == frozenset({"a", "b"})
    assert after_history.read.positions == frozenset({1}) and after_history.charge_set == frozenset({"a"})
    assert after_release.read.positions == frozenset({1, 2}) and after_release.charge_set == frozenset({"a", "b"})


def test_rebase_moves_the_cursor_to_the_scale_of_the_new_ledgers():
    interface = _interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE)
    sevenths = (Fraction(1, 7), Fraction(3, 7))
    rebased = cursor.rebase(sevenths)
    assert rebased.ledgers == sevenths and rebased.scale % 7 == 0
    assert rebased.plan().ledgers_after == (Fraction(1, 7) + Fraction(1, 2), Fraction(3, 7) + Fraction(1, 2))
    back = rebased.rebase(zero_ledgers(interface))
    assert back.ledgers == zero_ledgers(interface) and back.scale == cursor.scale


def test_rescale_multiplies_exactly():
    from dpmem_ref.core.ledgers import rescale

    assert rescale((1, 0, 5), 3, 12) == (4, 0, 20)
    assert rescale((3**40,), 7, 21) == (3**41,)  # beyond a float's 53 bits: integer arithmetic


def test_slot_plans_compare_and_hash_on_their_first_ten_fields():
    interface = _interface()
    prefix = PublicPrefix((), interface.query("q"), ())
    plan = plan_slot(interface, zero_ledgers(interface), prefix, "g", STORE)
    again = plan_slot(interface, zero_ledgers(interface), prefix, "g", STORE)
    rescaled = plan._replace(units_after=tuple(2 * u for u in plan.units_after), scale=2 * plan.scale)
    for same in (again, rescaled):
        assert same is not plan and same == plan and not (same != plan) and hash(same) == hash(plan)
    later = plan_slot(interface, plan.ledgers_after, prefix, "g", STORE)
    assert later != plan and not (later == plan)
    # Distinct plans hash apart (tuples of public values: a collision has probability ~2**-64).
    assert hash(later) != hash(plan)


def test_a_cursor_prints_its_public_position_only():
    interface = _interface()
    cursor = begin_turn(interface, InterfaceState.initial(interface), "q", STORE)
    assert repr(cursor) == "TurnCursor(query='q', turn=0, slots=['g'], released=[])"
    assert repr(cursor.release("g.v1")) == "TurnCursor(query='q', turn=0, slots=['g'], released=[('g', 'g.v1')])"


def test_a_point_mass_batch_repeats_its_view_and_draws_nothing():
    from dpmem_ref import PointMass

    source = TapeSource([])
    assert PointMass(views=("g.gen", "g.v1"), view="g.v1").sample_many(3, source) == ("g.v1",) * 3
    assert PointMass(views=("g.gen",), view="g.gen").sample_many(0, source) == () and source.consumed == 0
