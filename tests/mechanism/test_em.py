"""The exponential mechanism's release laws (dpmem_ref.mechanism.em). Eq. (7): the exact
description, the exact sampler, and its independence from floats; the likelihoods of
ExponentialWeights and PointMass at the working precision, point-mass batches, the EM's own
input check, and which proposal (uniform or bucketed) a sample uses.
"""

from __future__ import annotations

import sys
from collections import Counter
from fractions import Fraction

import mpmath
import pytest

from dpmem_ref import InputError, SeededRandomSource, TapeSource, bernoulli_exp_minus, exponential_mechanism, plan_slot
from dpmem_ref.core.transcript import PublicPrefix
from dpmem_ref.mechanism.bernoulli import _bernoulli_exp_minus_unit, uniform_proposal_round
from dpmem_ref.mechanism.em import ExponentialWeights
from dpmem_ref.turn import zero_ledgers
from tests.kernel_fixtures import ScriptedSource, figure2

CASES = [
    ("paper-like", [Fraction(4, 5), Fraction(2, 5), Fraction(3, 5), Fraction(0), Fraction(1, 5)], Fraction(2, 3), Fraction(3, 5)),
    ("ties", [Fraction(1, 2)] * 4, Fraction(2, 3), Fraction(3, 5)),
    ("ties with a winner", [Fraction(1), Fraction(1), Fraction(0)], Fraction(1), Fraction(3, 5)),
    ("extreme eps", [Fraction(1), Fraction(0), Fraction(1, 2)], Fraction(12), Fraction(1)),
    ("tiny eps", [Fraction(1), Fraction(0)], Fraction(1, 1000), Fraction(3, 5)),
]


def independent_eq7(scores: list[Fraction], epsilon: Fraction, sensitivity: Fraction) -> list[mpmath.mpf]:
    """Eq. (7) written out directly, at 80 digits."""
    with mpmath.workdps(80):
        weights = [mpmath.exp(mpmath.mpf(epsilon.numerator) / epsilon.denominator * (mpmath.mpf(u.numerator) / u.denominator)
                              / (2 * mpmath.mpf(sensitivity.numerator) / sensitivity.denominator)) for u in scores]
        total = mpmath.fsum(weights)
        return [w / total for w in weights]


@pytest.mark.parametrize("label, scores, epsilon, sensitivity", CASES, ids=[c[0] for c in CASES])
def test_exact_distribution_matches_eq7_to_40_digits(label, scores, epsilon, sensitivity) -> None:
    views = tuple(f"v{i}" for i in range(len(scores)))
    distribution = exponential_mechanism(views, scores, epsilon, sensitivity)
    expected = independent_eq7(scores, epsilon, sensitivity)
    with mpmath.workdps(60):
        got = distribution.probabilities()
        for view, p, q in zip(views, got, expected, strict=True):
            assert abs(p - q) < mpmath.mpf(10) ** -40, view
            assert abs(mpmath.exp(distribution.log_probability(view)) - q) < mpmath.mpf(10) ** -40
        assert abs(mpmath.fsum(got) - 1) < mpmath.mpf(10) ** -50


def test_plan_slot_distribution_is_eq7_for_figure2_food_slot() -> None:
    loaded = figure2()
    interface = loaded.interface
    query = interface.query("affordable-dinner")
    plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix(history=(), query=query), "food", loaded.store("M"))
    # u = 0.4 r + 0.4 c + 0.2 s over the read items {2, 3} of store M (tags blood-sugar,
    # carb-counting, tight-budget): balanced-meals 0, low-glycemic 0.2+0.4+0.2, budget-friendly 0.4+0.4+0.1.
    scores = [Fraction(0), Fraction(4, 5), Fraction(9, 10)]
    expected = independent_eq7(scores, Fraction(2, 3), Fraction(3, 5))
    with mpmath.workdps(60):
        for view, q in zip(plan.vocabulary.names, expected, strict=True):
            assert abs(mpmath.exp(plan.distribution.log_probability(view)) - q) < mpmath.mpf(10) ** -40


def chi_square_p_value(observed: list[int], probabilities: list[mpmath.mpf]) -> float:
    total = sum(observed)
    statistic = sum((o - total * p) ** 2 / (total * p) for o, p in zip(observed, probabilities, strict=True))
    degrees = len(observed) - 1
    return float(mpmath.gammainc(mpmath.mpf(degrees) / 2, statistic / 2, mpmath.inf, regularized=True))


@pytest.mark.parametrize("label, scores, epsilon, sensitivity", CASES, ids=[c[0] for c in CASES])
def test_exact_sampler_passes_chi_square_over_200k_draws(label, scores, epsilon, sensitivity) -> None:
    views = tuple(f"v{i}" for i in range(len(scores)))
    distribution = exponential_mechanism(views, scores, epsilon, sensitivity)
    source = SeededRandomSource(20261129)
    counts = Counter(distribution.sample(source) for _ in range(200_000))
    probabilities = [mpmath.mpf(p) for p in independent_eq7(scores, epsilon, sensitivity)]
    observed = [counts[v] for v in views]
    # Views whose expected count is tiny are pooled so that the chi-square approximation holds.
    significant = [(o, p) for o, p in zip(observed, probabilities, strict=True) if 200_000 * p >= 5]
    pooled_o = sum(observed) - sum(o for o, _ in significant)
    pooled_p = 1 - mpmath.fsum(p for _, p in significant)
    if pooled_o or pooled_p * 200_000 >= 1e-9:
        significant.append((pooled_o, pooled_p))
    if len(significant) < 2:
        assert max(observed) == 200_000
        return
    p_value = chi_square_p_value([o for o, _ in significant], [p for _, p in significant])
    assert p_value > 0.001, (label, observed)


def test_chi_square_rejects_a_wrong_distribution() -> None:
    """The statistical check has power: a sampler drawing uniformly is rejected."""
    views = ("v0", "v1", "v2")
    distribution = exponential_mechanism(views, [Fraction(1), Fraction(0), Fraction(0)], Fraction(4), Fraction(1))
    source = SeededRandomSource(5)
    counts = Counter(views[source.randbelow(3)] for _ in range(200_000))
    with mpmath.workdps(30):
        p_value = chi_square_p_value([counts[v] for v in views], list(distribution.probabilities()))
    assert p_value < 1e-6


def test_sampler_decisions_use_no_floats() -> None:
    """Trace every line of the uniform-proposal sampler: no local variable is ever a float, and
    the random source is only asked for integers below integer bounds (the bucketed sampler and
    the batch: tests/mechanism/test_sampler_batch.py)."""
    distribution = exponential_mechanism(("a", "b", "c"), [Fraction(1), Fraction(1, 3), Fraction(0)], Fraction(5, 2), Fraction(3, 5))
    watched = {
        ExponentialWeights.sample.__code__,
        uniform_proposal_round.__code__, bernoulli_exp_minus.__code__, _bernoulli_exp_minus_unit.__code__,
    }
    seen_floats: list[str] = []
    bounds: list[object] = []

    class CheckingSource:
        def __init__(self) -> None:
            self.inner = SeededRandomSource(3)

        def randbelow(self, bound: int) -> int:
            bounds.append(bound)
            value = self.inner.randbelow(bound)
            assert type(value) is int
            return value

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        if frame.f_code in watched:
            for name, value in frame.f_locals.items():
                if isinstance(value, float):
                    seen_floats.append(f"{frame.f_code.co_name}.{name}")
            return tracer
        return None

    source = CheckingSource()
    previous = sys.gettrace()  # coverage.py's tracer, when the suite runs under it
    sys.settrace(tracer)
    try:
        draws = [distribution.sample(source) for _ in range(2_000)]
    finally:
        sys.settrace(previous)  # restored: else branch coverage stops here for the rest of the run
    assert set(draws) == {"a", "b", "c"}
    assert seen_floats == []
    assert bounds and all(type(b) is int for b in bounds)


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 7), Fraction(1), Fraction(5, 2), Fraction(9, 4)])
def test_bernoulli_exp_minus_frequency(gamma: Fraction) -> None:
    source = SeededRandomSource(11)
    trials = 100_000
    hits = sum(bernoulli_exp_minus(gamma, source) for _ in range(trials))
    expected = float(mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator))
    sigma = (expected * (1 - expected) / trials) ** 0.5
    assert abs(hits / trials - expected) <= 5 * sigma + 1e-12


def test_seeded_source_reproduces_draws() -> None:
    distribution = exponential_mechanism(("a", "b"), [Fraction(1), Fraction(0)], Fraction(1), Fraction(1))
    first = [distribution.sample(SeededRandomSource(7)) for _ in range(1)]
    a = SeededRandomSource(7)
    b = SeededRandomSource(7)
    assert [distribution.sample(a) for _ in range(500)] == [distribution.sample(b) for _ in range(500)]
    assert first


def test_distribution_repr_hides_exponents() -> None:
    distribution = exponential_mechanism(("a", "b"), [Fraction(7, 9), Fraction(0)], Fraction(1), Fraction(1))
    assert "7/9" not in repr(distribution) and "7, 9" not in repr(distribution)
    assert "private" in repr(distribution)


def test_point_mass_likelihoods():
    import mpmath

    from dpmem_ref import PointMass

    fallback = PointMass(views=("g.gen", "g.v1"), view="g.gen")
    assert fallback.support() == ("g.gen",)
    assert fallback.sample(ScriptedSource()) == "g.gen"  # draws nothing
    assert fallback.log_probability("g.gen") == 0
    assert fallback.log_probability("g.v1") == mpmath.mpf("-inf")
    certain = fallback.log_probability_interval("g.gen")
    assert certain is not None and certain.a == 0 and certain.b == 0
    assert fallback.log_probability_interval("g.v1") is None


def test_a_point_mass_batch_repeats_its_view_and_draws_nothing():
    from dpmem_ref import PointMass

    source = TapeSource([])
    assert PointMass(views=("g.gen", "g.v1"), view="g.v1").sample_many(3, source) == ("g.v1",) * 3
    assert PointMass(views=("g.gen",), view="g.gen").sample_many(0, source) == () and source.consumed == 0


def test_em_likelihoods_follow_the_working_precision():
    """The normaliser is cached per precision: a value computed at 15 digits must not be
    served at 80 (mp) or 150 (interval) digits."""
    import mpmath

    from dpmem_ref import exponential_mechanism
    from dpmem_ref.mechanism.em import iv_precision

    em = exponential_mechanism(("a", "b", "c"), (Fraction(0), Fraction(1, 2), Fraction(1)), Fraction(1), Fraction(1))
    with mpmath.workdps(15):
        em.log_probability("b")
    em.log_probability_interval("b")
    with mpmath.workdps(160):
        exact = mpmath.mpf(1) / 4 - mpmath.log(1 + mpmath.exp(mpmath.mpf(1) / 4) + mpmath.exp(mpmath.mpf(1) / 2))
        with mpmath.workdps(80):
            assert abs(em.log_probability("b") - exact) < mpmath.mpf(10) ** -75
        with iv_precision(150):
            enclosure = em.log_probability_interval("b")
            assert enclosure.a <= exact <= enclosure.b
            assert enclosure.delta < mpmath.mpf(10) ** -140
    assert em.log_probability("zzz") == mpmath.mpf("-inf")
    assert em.log_probability_interval("zzz") is None


def test_em_exponents_must_be_exact():
    from dpmem_ref import ExponentialWeights

    with pytest.raises(InputError) as error:
        ExponentialWeights(views=("a", "b"), exponents=(Fraction(0), 0.5))
    assert str(error.value) == "exponential mechanism exponent #1: expected an exact rational (Fraction), found 'float'"


# Every exponent shifted by 1 / (2**521 - 1) (a prime): the same gaps, but a common
# denominator past the integer route's 256 bits, so the construction takes the Fraction route.
@pytest.mark.parametrize("shift", [Fraction(0), Fraction(1, 2**521 - 1)], ids=["integer route", "fraction route"])
def test_the_uniform_proposal_serves_up_to_eight_views_or_a_spread_up_to_one(shift):
    """The documented dispatch (mechanism.UNIFORM_PROPOSAL_MAX_VIEWS / _MAX_SPREAD): the
    uniform proposal's first draw is an index below n, the bucketed proposal's a slot of
    its 64-bit table. Both are exact; the dispatch fixes how a seed or a tape is used, on
    either construction route."""
    from dpmem_ref import RecordingSource, SeededRandomSource
    from dpmem_ref.mechanism.em import UNIFORM_PROPOSAL_MAX_SPREAD, UNIFORM_PROPOSAL_MAX_VIEWS, ExponentialWeights

    assert (UNIFORM_PROPOSAL_MAX_VIEWS, UNIFORM_PROPOSAL_MAX_SPREAD) == (8, 1)

    def first_bound(exponents):
        law = ExponentialWeights(tuple(f"v{i}" for i in range(len(exponents))), tuple(x + shift for x in exponents))
        source = RecordingSource(SeededRandomSource(1))
        law.sample(source)
        return source.tape[0][0]

    wide = [Fraction(0)] + [Fraction(-3)] * 7  # spread 3
    assert first_bound(wide) == 8
    assert first_bound(wide + [Fraction(-3)]) == (1 << 64) - 1
    assert first_bound([Fraction(0)] + [Fraction(-1)] * 8) == 9  # spread exactly 1
    assert first_bound([Fraction(0)] + [Fraction(-1)] * 7 + [Fraction(-11, 10)]) == (1 << 64) - 1
