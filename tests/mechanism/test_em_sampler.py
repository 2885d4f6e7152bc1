"""The exact table sampler (dpmem_ref.mechanism.em_sampler): building the table, its sure
and residual slots, the rounds of `draw` and the residual Bernoulli.

The samplers' integer steps are pinned on scripted tapes (`TapeSource`), because a mutant
there may keep the law and change only which draws it consumes (a recorded tape would no
longer replay). The law itself: tests/mechanism/test_sampler_exact.py; batches:
tests/mechanism/test_sampler_batch.py.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import InputError, TapeSource
from dpmem_ref.mechanism.em_sampler import ExactTable, build_table, exp_neg_bounds, residual_accept


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


def test_draw_repeats_rounds_until_one_yields():
    # slot 4 (residual, U >= 1/2: rejected), slot 12 (empty), slot 5 (outcome 1).
    source = TapeSource([4, 1, 12, 5])
    assert HALF.draw(source) == 1 and source.consumed == 4


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
