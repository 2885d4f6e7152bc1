"""The hot path's integer shortcuts compute exactly what the Fraction arithmetic computes:
a release distribution built over one common denominator has the same
exponents, gaps, proposal choice and integer gap splits as the per-view Fraction
construction it replaced, on every route (small denominators, a common denominator past
the bound, the public constructor), and the same draws from the same tape."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmem_ref import ExponentialWeights, InputError, SeededRandomSource, exponential_mechanism
from dpmem_ref.core.rational import require_em_arguments
from dpmem_ref.mechanism import bernoulli, construction, em


def reference(views: tuple[str, ...], scores: list[Fraction], epsilon: Fraction, sensitivity: Fraction) -> dict[str, object]:
    """The plain construction, one Fraction operation per view."""
    factor = epsilon / (2 * sensitivity)
    exponents = tuple(factor * u for u in scores)
    top = max(exponents)
    gaps = tuple(top - x for x in exponents)
    return {
        "exponents": exponents,
        "gaps": gaps,
        "bucketed": len(views) > em.UNIFORM_PROPOSAL_MAX_VIEWS and max(gaps) > em.UNIFORM_PROPOSAL_MAX_SPREAD,
        "parts": tuple(bernoulli._split_gamma(gap) for gap in gaps),
    }


def fields(law: ExponentialWeights) -> dict[str, object]:
    return {
        "exponents": law.exponents,
        "gaps": law._gap_fractions(),
        "bucketed": law._bucketed,
        "parts": law._gap_parts,
    }


def exact_fields(found: dict[str, object], expected: dict[str, object]) -> None:
    assert found == expected
    # the same reduced integers, not only equal values
    for key in ("exponents", "gaps"):
        assert [(x.numerator, x.denominator) for x in found[key]] == [  # type: ignore[attr-defined]
            (x.numerator, x.denominator) for x in expected[key]  # type: ignore[attr-defined]
        ]


positive = st.fractions(min_value=Fraction(1, 1000), max_value=50, max_denominator=1000)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=40),
    st.sampled_from([1, 2, 3, 5, 7, 100, 10**30, 2**255 + 1]),
    st.booleans(),
    positive,
    positive,
)
def test_the_integer_construction_equals_the_fraction_one(
    picks: list[int], denominator: int, coprime: bool, epsilon: Fraction, sensitivity: Fraction
) -> None:
    # coprime: every view its own large denominator, so that the common one can pass the bound
    scores = [
        Fraction(pick, denominator * (2 * index + 7) ** 9) if coprime else Fraction(min(pick, denominator), denominator)
        for index, pick in enumerate(picks)
    ]
    views = tuple(f"v{i}" for i in range(len(scores)))
    construction._exponential_mechanism.cache_clear()
    law = exponential_mechanism(views, scores, epsilon, sensitivity)
    expected = reference(views, scores, epsilon, sensitivity)
    exact_fields(fields(law), expected)
    public = ExponentialWeights(views=views, exponents=expected["exponents"])  # type: ignore[arg-type]
    exact_fields(fields(public), expected)
    assert law == public and hash(law) == hash(public)
    first, second = SeededRandomSource(len(scores)), SeededRandomSource(len(scores))
    assert [law.sample(first) for _ in range(20)] == [public.sample(second) for _ in range(20)]


def test_the_common_denominator_falls_back_past_its_bound() -> None:
    primes = [1_000_003, 1_000_033, 1_000_037, 1_000_039, 1_000_081, 1_000_099, 1_000_117, 1_000_121]
    big = [p**8 for p in primes] * 2  # lcm far past 256 bits
    scores = [Fraction(index + 1, d) for index, d in enumerate(big)]
    assert em._common_denominator([s.denominator for s in scores]) is None
    views = tuple(f"v{i}" for i in range(len(scores)))
    law = exponential_mechanism(views, scores, Fraction(4), Fraction(1, 3))
    exact_fields(fields(law), reference(views, scores, Fraction(4), Fraction(1, 3)))


def test_a_negative_exponent_and_a_wide_spread_through_the_public_constructor() -> None:
    exponents = (Fraction(-7, 3), Fraction(5, 2), Fraction(0), Fraction(-1, 6)) * 3
    views = tuple(f"v{i}" for i in range(len(exponents)))
    law = ExponentialWeights(views=views, exponents=exponents)
    top = max(exponents)
    gaps = tuple(top - x for x in exponents)
    assert law._gap_fractions() == gaps and law._bucketed
    assert law._gap_parts == tuple(bernoulli._split_gamma(gap) for gap in gaps)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: require_em_arguments(("a",), "x", Fraction(1), Fraction(1)), "scores: expected one exact score"),
        (lambda: require_em_arguments(("a", "b"), [Fraction(1), Fraction(3, 2)], Fraction(1), Fraction(1)), "scores[1]:"),
        (lambda: require_em_arguments(("a",), [Fraction(-1, 2)], Fraction(1), Fraction(1)), "scores[0]:"),
        (lambda: require_em_arguments(("a",), [0.5], Fraction(1), Fraction(1)), "scores[0]:"),
        (lambda: require_em_arguments(("a",), [Fraction(1)], Fraction(0), Fraction(1)), "epsilon:"),
        (lambda: require_em_arguments(("a",), [Fraction(1)], Fraction(1), Fraction(-1)), "sensitivity:"),
        (lambda: require_em_arguments((1,), [Fraction(1)], Fraction(1), Fraction(1)), "views: expected view names"),
    ],
)
def test_the_fast_argument_checks_refuse_what_the_general_ones_refuse(call: object, message: str) -> None:
    with pytest.raises(InputError) as caught:
        call()  # type: ignore[operator]
    assert str(caught.value).startswith(message)


def test_many_views_many_draws_match_the_reference_tables() -> None:
    rng = random.Random(25)
    for views_count in (9, 256, 1024):
        scores = [Fraction(rng.randrange(101), 100) for _ in range(views_count)]
        views = tuple(f"v{i}" for i in range(views_count))
        construction._exponential_mechanism.cache_clear()
        law = exponential_mechanism(views, scores, Fraction(12), Fraction(3, 5))
        exact_fields(fields(law), reference(views, scores, Fraction(12), Fraction(3, 5)))
