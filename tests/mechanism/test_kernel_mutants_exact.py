"""Tests that kill mutants mutmut found surviving in the kernel's exact arithmetic and
exact samplers after the Round-2 restructure (issue 15, point 3): `exact`, `em_sampler`,
and `mechanism.bucketed_round`. Turn, ledger and loss mutants: test_kernel_mutants_layout.py;
the equivalent survivors: scripts/mutation_equivalents.toml.

The samplers' integer steps are pinned on scripted tapes (`TapeSource`), because a mutant
there may keep the law and change only which draws it consumes (a recorded tape would no
longer replay). Error messages are asserted whole (one line naming the field).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import InputError, TapeSource
from dpmem_ref.core.rational import (
    nonnegative_fraction,
    positive_fraction,
    require_positive_rational,
    to_fraction,
    unit_interval_fraction,
)
from dpmem_ref.mechanism.bernoulli import bucket_proposal, bucketed_round
from dpmem_ref.mechanism.em_sampler import ExactTable, build_table, exp_neg_bounds, residual_accept
from dpmem_ref.mechanism.randomness import TapeExhausted

# ---------------------------------------------------------------------------------------
# exact: the range checks and their messages


RATIONAL = 'an integer or an exact rational string like "2/3"'


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, f"expected {RATIONAL}, found True"),
        (float("nan"), f"expected {RATIONAL} (a finite number, not NaN or infinity), found nan"),
        (float("inf"), f"expected {RATIONAL} (a finite number, not NaN or infinity), found inf"),
        (float("-inf"), f"expected {RATIONAL} (a finite number, not NaN or infinity), found -inf"),
        (0.1, f"expected {RATIONAL} (floats are not exact), found 0.1"),
        ("1" * 201, "expected a rational of at most 200 characters, found '201 characters'"),
        ("1/0", "expected a non-zero denominator, found '1/0'"),
        ("abc", f"expected {RATIONAL}, found 'abc'"),
        (None, f"expected {RATIONAL}, found None"),
        (1j, f"expected {RATIONAL}, found 1j"),
    ],
)
def test_to_fraction_names_the_field_and_what_was_wrong(value, message):
    with pytest.raises(InputError) as error:
        to_fraction(value, "budget.eps")
    assert str(error.value) == f"budget.eps: {message}"


def test_to_fraction_parses_exact_text():
    assert [to_fraction(v, "f") for v in (" 1 / 3 ", "-0.25", "+7", ".5", 4, Fraction(2, 3))] == [
        Fraction(1, 3), Fraction(-1, 4), Fraction(7), Fraction(1, 2), Fraction(4), Fraction(2, 3)
    ]
    assert to_fraction("1" * 200, "f") == int("1" * 200)


def test_to_fraction_admits_ascii_digits_spaces_and_tabs_and_refuses_other_characters_in_one_line():
    """Every Unicode whitespace character and decimal digit, around and inside a rational or
    a decimal: spaces and tabs give the ASCII text's value; anything else (U+001C is
    whitespace to `re` but not to int(); other scripts' digits) is refused with InputError,
    never a bare ValueError."""
    import re

    whitespace = [c for c in map(chr, range(0x110000)) if re.match(r"\s", c)]
    digits = [c for c in map(chr, range(0x110000)) if re.match(r"\d", c) and c not in "0123456789"]
    assert "\x1c" in whitespace and len(digits) > 300
    shapes = ("{c}1/3", "1/3{c}", "1{c}/{c}3", "-2{c}", "{c}1.5", "1.5{c}")
    values = (Fraction(1, 3), Fraction(1, 3), Fraction(1, 3), Fraction(-2), Fraction(3, 2), Fraction(3, 2))
    for c in whitespace:
        for shape, value in zip(shapes, values, strict=True):
            text = shape.format(c=c)
            if c in " \t":
                assert to_fraction(text, "f") == value, repr(text)
            else:
                with pytest.raises(InputError):
                    to_fraction(text, "f")
    for c in digits:
        for text in (c, f"1/{c}", f"{c}.5", f"0.{c}"):
            with pytest.raises(InputError):
                to_fraction(text, "f")


def test_positive_fraction_names_the_field():
    assert positive_fraction("1/4", "budget.K") == Fraction(1, 4)
    for bad, found in (("0", "'0'"), (-1, "-1")):
        with pytest.raises(InputError) as error:
            positive_fraction(bad, "budget.K")
        assert str(error.value) == f"budget.K: expected a positive number, found {found}"
    with pytest.raises(InputError) as error:
        positive_fraction("x", "budget.K")
    assert str(error.value) == f"budget.K: expected {RATIONAL}, found 'x'"


def test_nonnegative_fraction_accepts_zero_and_names_the_field():
    assert nonnegative_fraction("0", "uncharged_epsilon") == 0
    with pytest.raises(InputError) as error:
        nonnegative_fraction("-1/2", "uncharged_epsilon")
    assert str(error.value) == "uncharged_epsilon: expected a non-negative number, found '-1/2'"
    with pytest.raises(InputError) as error:
        nonnegative_fraction("x", "uncharged_epsilon")
    assert str(error.value) == f"uncharged_epsilon: expected {RATIONAL}, found 'x'"


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


def test_the_uniform_proposal_serves_up_to_eight_views_or_a_spread_up_to_one():
    """The documented dispatch (mechanism.UNIFORM_PROPOSAL_MAX_VIEWS / _MAX_SPREAD): the
    uniform proposal's first draw is an index below n, the bucketed proposal's a slot of
    its 64-bit table. Both are exact; the dispatch fixes how a seed or a tape is used."""
    from dpmem_ref import RecordingSource, SeededRandomSource
    from dpmem_ref.mechanism.em import UNIFORM_PROPOSAL_MAX_SPREAD, UNIFORM_PROPOSAL_MAX_VIEWS, ExponentialWeights

    assert (UNIFORM_PROPOSAL_MAX_VIEWS, UNIFORM_PROPOSAL_MAX_SPREAD) == (8, 1)

    def first_bound(exponents):
        law = ExponentialWeights(tuple(f"v{i}" for i in range(len(exponents))), tuple(exponents))
        source = RecordingSource(SeededRandomSource(1))
        law.sample(source)
        return source.tape[0][0]

    wide = [Fraction(0)] + [Fraction(-3)] * 7  # spread 3
    assert first_bound(wide) == 8
    assert first_bound(wide + [Fraction(-3)]) == (1 << 64) - 1
    assert first_bound([Fraction(0)] + [Fraction(-1)] * 8) == 9  # spread exactly 1
    assert first_bound([Fraction(0)] + [Fraction(-1)] * 7 + [Fraction(-11, 10)]) == (1 << 64) - 1
