"""The exact engine's one loss type (dpmem_ref.analysis.loss): impossible / finite interval /
infinite, with exact zeros, outward rounding and exact certificates."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, IV_DPS, PREC, ZERO, Loss, step_losses
from dpmem_ref.mechanism.em import iv_precision

fractions = st.fractions(min_value=-50, max_value=50, max_denominator=10**6)
# Half a unit in the last place at the working precision, relative: the widest an outward
# rounding of an exact rational may make an end.
ULP = Fraction(1, 2 ** (PREC - 8))


def encloses(loss: Loss, value: Fraction) -> bool:
    lo, hi = loss.ends()
    return lo <= value <= hi


def tight(loss: Loss, value: Fraction) -> bool:
    lo, hi = loss.ends()
    return hi - lo <= 2 * ULP * (abs(value) + 1)


@given(fractions)
def test_of_fractions_encloses_exactly_and_tightly(value: Fraction) -> None:
    loss = Loss.of_fractions(value, value)
    assert loss.is_finite and not loss.is_infinite and not loss.is_impossible
    assert encloses(loss, value) and tight(loss, value)
    assert loss.is_zero == (value == 0)


@given(fractions, fractions)
def test_add_encloses_the_sum(x: Fraction, y: Fraction) -> None:
    total = Loss.of_fractions(x, x).add(Loss.of_fractions(y, y))
    assert encloses(total, x + y) and tight(total, x + y)


@given(fractions, fractions)
def test_join_encloses_the_max_and_neg_the_negation(x: Fraction, y: Fraction) -> None:
    a, b = Loss.of_fractions(x, x), Loss.of_fractions(y, y)
    assert encloses(a.join(b), max(x, y)) and encloses(b.join(a), max(x, y))
    lo, hi = a.ends()
    assert a.neg().ends() == (-hi, -lo)
    assert a.ranks_above(b) == (a.ends()[1] > b.ends()[1])


def test_join_of_intervals_takes_each_end_from_its_maximum() -> None:
    a = Loss.of_fractions(Fraction(0), Fraction(5))
    b = Loss.of_fractions(Fraction(1), Fraction(3))
    assert a.join(b).ends() == (Fraction(1), Fraction(5))
    assert b.join(a).ends() == (Fraction(1), Fraction(5))
    assert a.join(a) is a and b.join(Loss.of_fractions(Fraction(0), Fraction(2))) is b


def test_impossible_and_infinite_absorb_and_order() -> None:
    one = Loss.of_fractions(Fraction(1), Fraction(1))
    for value in (ZERO, one, INFINITE):
        assert IMPOSSIBLE.add(value) is IMPOSSIBLE and value.add(IMPOSSIBLE) is IMPOSSIBLE
        assert IMPOSSIBLE.join(value) is value and value.join(IMPOSSIBLE) is value
    assert INFINITE.add(one) is INFINITE and one.add(INFINITE) is INFINITE
    assert INFINITE.join(one) is INFINITE and one.join(INFINITE) is INFINITE
    # The witness order: impossible < finite (by upper end) < infinite.
    assert INFINITE.ranks_above(one) and one.ranks_above(IMPOSSIBLE) and INFINITE.ranks_above(IMPOSSIBLE)
    assert not one.ranks_above(INFINITE) and not IMPOSSIBLE.ranks_above(one) and not one.ranks_above(one)
    assert one.ranks_above(ZERO) and not ZERO.ranks_above(one)


def test_exact_zero_is_an_identity_and_stays_exact() -> None:
    one = Loss.of_fractions(Fraction(1, 3), Fraction(1, 3))
    assert ZERO.is_zero and ZERO.add(ZERO).is_zero and ZERO.add(ZERO) == ZERO
    assert ZERO.add(one) is one and one.add(ZERO) is one
    assert ZERO.ends() == (0, 0) and ZERO.neg().is_zero
    assert not IMPOSSIBLE.is_zero and not INFINITE.is_zero and not one.is_zero


def test_certificates_compare_the_exact_ends() -> None:
    two = Loss.of_fractions(Fraction(2), Fraction(2))  # exactly representable: ends equal 2
    assert two.within(Fraction(2)) and not two.exceeds(Fraction(2))
    assert not two.within(Fraction(2) - Fraction(1, 10**30)) and two.exceeds(Fraction(2) - Fraction(1, 10**30))
    third = Loss.of_fractions(Fraction(4, 3), Fraction(4, 3))  # rounded outward: not certified at 4/3 itself
    assert not third.within(Fraction(4, 3)) and not third.exceeds(Fraction(4, 3))
    assert third.within(Fraction(4, 3) + Fraction(1, 10**60)) and third.exceeds(Fraction(4, 3) - Fraction(1, 10**60))
    assert IMPOSSIBLE.within(Fraction(0)) and not IMPOSSIBLE.exceeds(Fraction(0))
    assert not INFINITE.within(Fraction(10**9)) and INFINITE.exceeds(Fraction(10**9))


def test_reading_ends_and_midpoint() -> None:
    loss = Loss.of_fractions(Fraction(-1, 2), Fraction(3, 2))
    assert loss.lower == mpmath.mpf(-0.5) and loss.upper == mpmath.mpf(1.5) and loss.midpoint == mpmath.mpf(0.5)
    assert IMPOSSIBLE.lower == mpmath.mpf("-inf") and IMPOSSIBLE.upper == mpmath.mpf("-inf")
    assert INFINITE.lower == mpmath.mpf("inf") and INFINITE.upper == mpmath.mpf("inf") == INFINITE.midpoint
    assert IMPOSSIBLE.midpoint == mpmath.mpf("-inf")
    interval = loss.to_interval()
    assert Loss.interval(interval) == loss
    for value in (IMPOSSIBLE, INFINITE):
        for method in (value.ends, value.neg, value.to_interval):
            with pytest.raises(ValueError):
                method()


def test_equality_hash_and_repr() -> None:
    a = Loss.of_fractions(Fraction(1, 7), Fraction(1, 7))
    assert a == Loss.of_fractions(Fraction(1, 7), Fraction(1, 7)) and hash(a) == hash(Loss.of_fractions(*a.ends()))
    assert a != ZERO and a != "Loss" and ZERO != IMPOSSIBLE and IMPOSSIBLE != INFINITE
    assert repr(IMPOSSIBLE) == "Loss(impossible)" and repr(INFINITE) == "Loss(inf)" and repr(ZERO) == "Loss(0)"
    assert repr(Loss.of_fractions(Fraction(1, 4), Fraction(1, 2))) == "Loss([0.25, 0.5])"


def test_step_losses_from_log_probability_enclosures() -> None:
    with iv_precision(IV_DPS):
        log_a, log_b = mpmath.iv.log(mpmath.iv.mpf("0.75")), mpmath.iv.log(mpmath.iv.mpf("0.25"))
        ab, ba = step_losses(log_a, log_b)
    with mpmath.workdps(IV_DPS + 20):
        exact = mpmath.log(3)
        assert ab.lower <= exact <= ab.upper and ba.lower <= -exact <= ba.upper
        assert ab.upper - ab.lower < mpmath.mpf(10) ** (5 - IV_DPS)
    assert ba == ab.neg()
    assert step_losses(None, None) == (IMPOSSIBLE, IMPOSSIBLE)
    assert step_losses(log_a, None) == (INFINITE, IMPOSSIBLE)
    assert step_losses(None, log_b) == (IMPOSSIBLE, INFINITE)
    with pytest.raises(ValueError):
        Loss.interval(mpmath.iv.mpf(["-inf", "0"]))
    with pytest.raises(ValueError):
        Loss.interval(mpmath.iv.mpf(["0", "inf"]))


def test_equal_kinds_never_rank_above_each_other():
    one = Loss.of_fractions(Fraction(1), Fraction(1))
    for loss in (IMPOSSIBLE, INFINITE, ZERO, one):
        assert not loss.ranks_above(loss)
    assert not INFINITE.ranks_above(Loss(INFINITE.kind)) and not IMPOSSIBLE.ranks_above(Loss(IMPOSSIBLE.kind))


def test_add_rounds_outward_and_keeps_a_zero_end():
    from dpmem_ref.analysis.loss import PREC

    one = Loss.of_fractions(Fraction(1), Fraction(1))
    tiny = Loss.of_fractions(Fraction(1, 2**300), Fraction(1, 2**300))
    # 1 + 2**-300 needs 301 bits: the ends round down / up at the working precision.
    assert one.add(tiny).ends() == (Fraction(1), 1 + Fraction(1, 2 ** (PREC - 1)))
    half_open = Loss.of_fractions(Fraction(0), Fraction(1))  # one end 0 is not the exact zero
    assert one.add(half_open).ends() == (Fraction(1), Fraction(2))
    assert half_open.add(one).ends() == (Fraction(1), Fraction(2))
    assert one.add(ZERO) is one and ZERO.add(one) is one


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


def test_join_and_the_witness_order_decide_ends_that_tie_as_floats_exactly() -> None:
    """Ends 2**-80 and 2**-70 above 1 both round to the float 1.0: the fast float test ties,
    and the exact comparison must decide (a join is the exact max of each end; the witness
    order ranks by the exact upper end)."""
    small, large = 1 + Fraction(1, 2**80), 1 + Fraction(1, 2**70)
    a = Loss.of_fractions(small, large)  # lower end small, upper end large
    b = Loss.of_fractions(large, large + Fraction(1, 2**90))  # both ends the larger
    c = Loss.of_fractions(small, small)
    for joined in (a.join(b), b.join(a)):
        assert joined.lower == b.lower and joined.upper == b.upper
    for joined in (a.join(c), c.join(a)):
        assert joined.lower == a.lower == c.lower and joined.upper == a.upper
    assert float(a.upper) == float(c.upper) == 1.0
    assert a.ranks_above(c) and not c.ranks_above(a)
    assert b.ranks_above(a) and not a.ranks_above(b)
    assert not a.ranks_above(a)
