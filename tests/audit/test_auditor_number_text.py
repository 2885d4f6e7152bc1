"""How the auditor prints numbers (dpmem_ref.audit.numbers): bounds as decimals rounded up,
impossible losses as "-inf", interval ends in fixed point from 1e-6 to just below 1e21 and
d.ddde<n> outside, and the witness replay at the loss's own proved quantum."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, ZERO, Loss
from dpmem_ref.audit.digits import certain
from dpmem_ref.audit.numbers import bound_decimal, end_text, interval_text, loss_text, replayed_text


def test_a_bound_that_does_not_terminate_prints_fifty_digits_rounded_up() -> None:
    assert bound_decimal(Fraction(1, 3)) == "0." + "3" * 49 + "4"
    assert bound_decimal(Fraction(2, 3)) == "0." + "6" * 49 + "7"
    assert bound_decimal(Fraction(4, 3)) == "1." + "3" * 48 + "4"
    assert bound_decimal(Fraction(5, 2)) == "2.5" and bound_decimal(Fraction(8)) == "8"


def test_an_impossible_loss_prints_minus_inf() -> None:
    assert loss_text(IMPOSSIBLE) == "-inf"
    assert interval_text(IMPOSSIBLE) == ["-inf", "-inf"]
    assert (loss_text(INFINITE), interval_text(INFINITE)) == ("inf", ["inf", "inf"])


ZEROS_49 = "0" * 49


@pytest.mark.parametrize(
    ("value", "up", "text"),
    [
        # below 1e-6: d.ddde<n> with all fifty digits
        (Fraction(12345, 10**11), True, "1.2345" + "0" * 45 + "e-7"),
        (Fraction(-12345, 10**11), False, "-1.2345" + "0" * 45 + "e-7"),
        # from 1e-6: fixed point
        (Fraction(12345, 10**10), True, "0.0000012345" + "0" * 45),
        (Fraction(7, 10**6), False, "0.000007" + ZEROS_49),
        # just below 1e21 rounded down: fixed point; rounded up it carries into 1e21, still fixed
        (Fraction(10**21) - Fraction(1, 10**40), False, "9" * 21 + "." + "9" * 29),
        (Fraction(10**21) - Fraction(1, 10**40), True, "1" + "0" * 21 + "." + "0" * 29),
        # from 1e21: d.ddde<n>
        (Fraction(3, 2) * 10**21, False, "1.5" + "0" * 48 + "e21"),
        (Fraction(10**21), True, "1." + ZEROS_49 + "e21"),
    ],
)
def test_interval_ends_print_fixed_from_1e_minus_6_to_below_1e21(value: Fraction, up: bool, text: str) -> None:
    assert end_text(value, up=up) == text


def test_interval_ends_round_outward() -> None:
    lo, hi = interval_text(Loss.of_fractions(Fraction(1, 3), Fraction(1, 3)))
    assert lo == "0." + "3" * 50 and hi == "0." + "3" * 49 + "4"


def test_the_replay_prints_at_the_proved_quantum_of_the_loss() -> None:
    """An enclosure proving about 19 digits: the replay is cut to the same quantum, so the
    two texts compare digit for digit."""
    loss = Loss.of_fractions(Fraction(1, 3) - Fraction(1, 10**20), Fraction(1, 3) + Fraction(1, 10**20))
    assert loss_text(loss) == "0." + "3" * 19
    assert replayed_text(Fraction(1, 3), loss) == "0." + "3" * 19
    assert replayed_text(Fraction(1, 3) + Fraction(1, 10**19), loss) == "0." + "3" * 18 + "4"


def test_the_replay_of_a_loss_without_a_quantum_prints_fifty_digits() -> None:
    assert replayed_text(None, INFINITE) == "inf"
    assert replayed_text(Fraction(0), ZERO) == "0"
    assert replayed_text(Fraction(1), ZERO) == "1." + ZEROS_49
    assert replayed_text(Fraction(-1, 3), ZERO) == "-0." + "3" * 50


def test_a_reversed_enclosure_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError) as error:
        certain(Fraction(2), Fraction(1), 10)
    assert str(error.value) == "an enclosure needs lo <= hi"
