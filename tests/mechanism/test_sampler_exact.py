"""The exact EM sampler's law IS Eq. (7): proved by enumerating the random draws.

A round of each sampler (uniform proposal, bucketed proposal, the per-view table of
`sample_many`) is run on every prefix of the random tape (depth-first, exact Fraction
masses, each draw branching over all its values) until only a tiny undecided mass is
left. Rounds are independent and the samplers repeat them until one yields a view, so the
law of a draw is the round's law normalized: we check Eq. (7), computed independently at
50 digits, lies in the enumerated enclosure, and that the enclosure is narrow. Where every
weight is rational (ties, exp(0)), the enumerated law equals Eq. (7) as Fractions.
Small `table_bits`/`chunk_bits` keep every draw's bound small enough to branch on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

import mpmath
import pytest

from dpmem_ref import RecordingSource, SeededRandomSource, TapeSource, exponential_mechanism
from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.bernoulli import bucket_proposal, bucketed_round, uniform_proposal_round
from dpmem_ref.mechanism.em_sampler import build_table, exp_neg_bounds, residual_accept


class _NeedDraw(Exception):
    def __init__(self, bound: int) -> None:
        self.bound = bound


class _PrefixSource:
    """Replays a prefix of (bound, value) draws, then asks the enumerator to branch."""

    def __init__(self, prefix: tuple[tuple[int, int], ...]) -> None:
        self.prefix = prefix
        self.index = 0

    def randbelow(self, bound: int) -> int:
        if self.index == len(self.prefix):
            raise _NeedDraw(bound)
        expected, value = self.prefix[self.index]
        assert expected == bound  # the draw sequence is a function of the earlier draws
        self.index += 1
        return value


def enumerate_round(run: Callable[[_PrefixSource], int | None], min_mass: Fraction = Fraction(1, 2**24)):
    """Exact masses of every outcome of one round (None = the round yields nothing), and
    the mass of tape prefixes left undecided (each below min_mass)."""
    law: dict[int | None, Fraction] = defaultdict(Fraction)
    undecided = Fraction(0)
    stack: list[tuple[tuple[tuple[int, int], ...], Fraction]] = [((), Fraction(1))]
    while stack:
        prefix, mass = stack.pop()
        try:
            outcome = run(_PrefixSource(prefix))
        except _NeedDraw as need:
            if mass < min_mass:
                undecided += mass
            else:
                stack.extend((prefix + ((need.bound, value),), mass / need.bound) for value in range(need.bound))
            continue
        law[outcome] += mass
    return law, undecided


def eq7(exponents: list[Fraction]) -> list[mpmath.mpf]:
    with mpmath.workdps(50):
        weights = [mpmath.exp(mpmath.mpf(x.numerator) / x.denominator) for x in exponents]
        total = mpmath.fsum(weights)
        return [w / total for w in weights]


def assert_round_law_is(law, undecided, expected, tolerance: float) -> None:
    """The normalized round law encloses `expected`, within `tolerance`."""
    decided = sum(mass for outcome, mass in law.items() if outcome is not None)
    assert decided > 0
    assert set(law) - {None} <= set(range(len(expected)))
    for index, p in enumerate(expected):
        low = law.get(index, Fraction(0)) / (decided + undecided)
        high = (law.get(index, Fraction(0)) + undecided) / decided
        with mpmath.workdps(50):
            assert mpmath.mpf(low.numerator) / low.denominator <= p <= mpmath.mpf(high.numerator) / high.denominator, index
        assert high - low < tolerance, (index, float(high - low))


# Scores in thirds and sixths: gaps with non-zero remainders below every bucket edge.
SCORES = [Fraction(1), Fraction(0), Fraction(2, 3), Fraction(1, 3), Fraction(5, 6)]


@pytest.mark.parametrize("epsilon", [Fraction(7), Fraction(12)])
def test_bucketed_round_law_encloses_eq7(epsilon: Fraction) -> None:
    distribution = exponential_mechanism(tuple(f"v{i}" for i in range(5)), SCORES, epsilon, Fraction(1))
    gaps = tuple(max(distribution.exponents) - x for x in distribution.exponents)
    proposal = bucket_proposal(gaps, table_bits=8, chunk_bits=2)
    law, undecided = enumerate_round(lambda source: bucketed_round(proposal, gaps, source))
    assert law[None] > 0  # the small table makes empty and residual slots real branches
    # The undecided mass is mostly Bernoulli(exp(-gamma)) runs past their third draw.
    assert_round_law_is(law, undecided, eq7(list(distribution.exponents)), 1e-3)


def test_uniform_round_law_encloses_eq7() -> None:
    distribution = exponential_mechanism(("a", "b", "c", "d"), [Fraction(1), Fraction(0), Fraction(1, 2), Fraction(3, 4)], Fraction(2), Fraction(1))
    gaps = tuple(max(distribution.exponents) - x for x in distribution.exponents)
    law, undecided = enumerate_round(lambda source: uniform_proposal_round(gaps, source))
    assert_round_law_is(law, undecided, eq7(list(distribution.exponents)), 1e-5)


def test_table_round_law_encloses_weights() -> None:
    """The per-view table that `sample_many` uses: Pr[i] proportional to m_i exp(-x_i)."""
    multiplicities = [1, 3, 2, 1]
    exponents = [Fraction(0), Fraction(1, 3), Fraction(5, 2), Fraction(41, 7)]
    table = build_table(multiplicities, exponents, table_bits=8, chunk_bits=2)
    law, undecided = enumerate_round(table.round)
    with mpmath.workdps(50):
        weights = [m * mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator) for m, x in zip(multiplicities, exponents, strict=True)]
        expected = [w / mpmath.fsum(weights) for w in weights]
    assert_round_law_is(law, undecided, expected, 1e-4)


def test_rational_weights_give_eq7_exactly() -> None:
    """Ties (every weight exp(0)): the enumerated law equals Eq. (7) as Fractions, nothing undecided."""
    table = build_table([1, 2, 3], [Fraction(0)] * 3, table_bits=8)
    law, undecided = enumerate_round(table.round)
    decided = 1 - law[None]
    assert undecided == 0
    assert [law[i] / decided for i in range(3)] == [Fraction(1, 6), Fraction(2, 6), Fraction(3, 6)]
    ties = (Fraction(0),) * 4
    law, undecided = enumerate_round(lambda source: uniform_proposal_round(ties, source))
    assert undecided == 0 and law == {i: Fraction(1, 4) for i in range(4)}
    law, undecided = enumerate_round(lambda source: bucketed_round(bucket_proposal(ties, table_bits=8), ties, source))
    decided = 1 - law[None]
    assert undecided == 0 and [law[i] / decided for i in range(4)] == [Fraction(1, 4)] * 4


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 10**9), Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(44), Fraction(200, 3)])
@pytest.mark.parametrize("bits", [1, 8, 64, 80, 300])
def test_exp_neg_bounds_bracket_exp(x: Fraction, bits: int) -> None:
    low, high = exp_neg_bounds(x, bits)
    with mpmath.workdps(200):
        value = mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator) * mpmath.mpf(2) ** bits
        assert low <= value <= high
    assert 0 <= high - low <= 4


def test_exp_neg_bounds_rejects_negative_exponents() -> None:
    with pytest.raises(InputError):
        exp_neg_bounds(Fraction(-1, 2), 8)


@pytest.mark.parametrize("table_bits", [8, 20, 64])
def test_table_slots_are_the_exact_floors(table_bits: int) -> None:
    """a_i = floor(s m_i exp(-x_i)) (independent 100-digit check), one residual slot iff x_i > 0."""
    multiplicities = [1, 5, 2, 7]
    exponents = [Fraction(0), Fraction(3, 4), Fraction(9), Fraction(100)]
    table = build_table(multiplicities, exponents, table_bits=table_bits)
    start = 0
    with mpmath.workdps(100):
        for m, x, sure, end in zip(multiplicities, exponents, table.sure, table.ends, strict=True):
            target = table.scale * m * mpmath.exp(-mpmath.mpf(x.numerator) / x.denominator)
            assert sure == int(mpmath.floor(target))
            assert end - start == sure + (x != 0)
            start = end
    assert table.ends[-1] < table.bound == (1 << table_bits) - 1


def test_residual_bernoulli_boundary_is_the_fraction_at_64_bits() -> None:
    """With 32-bit chunks, U just below f = T - a is accepted and U just above rejected."""
    table = build_table([1, 1], [Fraction(0), Fraction(2, 3)])
    with mpmath.workdps(60):
        target = table.scale * mpmath.exp(-mpmath.mpf(2) / 3)
        edge = int(mpmath.floor((target - table.sure[1]) * mpmath.mpf(2) ** 64))
    high_word, low_word = divmod(edge, 1 << 32)
    below = TapeSource([high_word, low_word - 1])
    assert residual_accept(table, 1, below) and below.consumed == 2
    above = TapeSource([high_word, low_word + 1])
    assert not residual_accept(table, 1, above) and above.consumed == 2
    assert residual_accept(table, 1, TapeSource([high_word - 1]))
    assert not residual_accept(table, 1, TapeSource([high_word + 1]))


@pytest.mark.parametrize(
    "scores, epsilon, uses_buckets",
    [
        ([Fraction(1), Fraction(0), Fraction(1, 2)] * 3, Fraction(2), False),  # spread 1: uniform proposal
        ([Fraction(1), Fraction(0), Fraction(1, 2)], Fraction(12), False),  # 3 views: uniform proposal
        ([Fraction(1), Fraction(0), Fraction(1, 2)] * 3, Fraction(12), True),
        ([Fraction(1)] + [Fraction(0)] * 63, Fraction(12), True),
    ],
)
def test_sample_repeats_the_rounds_on_one_tape(scores, epsilon, uses_buckets) -> None:
    """`sample` is exactly "repeat the round until it yields": same view, same draws."""
    distribution = exponential_mechanism(tuple(f"v{i}" for i in range(len(scores))), scores, epsilon, Fraction(1))
    gaps = tuple(max(distribution.exponents) - x for x in distribution.exponents)
    proposal = bucket_proposal(gaps)
    for seed in range(50):
        recorder = RecordingSource(SeededRandomSource(seed))
        view = distribution.sample(recorder)
        tape = TapeSource([value for _, value in recorder.tape])
        index = None
        while index is None:
            index = bucketed_round(proposal, gaps, tape) if uses_buckets else uniform_proposal_round(gaps, tape)
        assert distribution.views[index] == view
        assert tape.consumed == len(recorder.tape)
