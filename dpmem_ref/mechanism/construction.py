"""The exponential mechanism's construction from scores (Eq. 7).

`exponential_mechanism` checks its arguments and builds the exact release distribution
(`dpmem_ref.mechanism.em.ExponentialWeights`) with exponents x_v = eps * u_v / (2 Delta)
(`em_exponents`), memoized on the scores' value and made on integers over one common
denominator; `validate_em_inputs` is the planner's C3 check of the same arguments; and
`argmax_view` is the deterministic (NOT private) selection of a broken selector.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.core.rational import require_em_arguments
from dpmem_ref.mechanism.em import ExponentialWeights, PointMass, _common_denominator


def em_exponents(scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction) -> tuple[Fraction, ...]:
    """x_v = eps * u_v / (2 Delta): the exponents of Eq. (7)."""
    factor = epsilon / (2 * sensitivity)
    return tuple(factor * u for u in scores)


def validate_em_inputs(slot: str, scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction) -> None:
    """C3: an admitted charged selection uses the EM with eps > 0, Delta > 0, u in [0, 1]."""
    if not isinstance(epsilon, Fraction) or epsilon <= 0:
        raise ContractViolation("C3", f"slot {slot}: epsilon must be a positive exact rational, found {epsilon}")
    if not isinstance(sensitivity, Fraction) or sensitivity <= 0:
        raise ContractViolation("C3", f"slot {slot}: sensitivity bound must be positive, found {sensitivity}")
    for index, score in enumerate(scores):
        # The value is internal: name only the position of the offending score.
        if not isinstance(score, Fraction):
            raise ContractViolation("C3", f"slot {slot}: score #{index} is not an exact rational")
        if not 0 <= score <= 1:
            raise ContractViolation("C3", f"slot {slot}: score #{index} lies outside [0, 1]")


@lru_cache(maxsize=65_536)
def _exponential_mechanism(
    views: tuple[str, ...],
    numerators: tuple[int, ...],
    denominators: tuple[int, ...],
    epsilon: Fraction,
    sensitivity: Fraction,
) -> ExponentialWeights:
    """Eq. (7) for the scores u_v = numerators[v] / denominators[v] (reduced: the key is the
    scores' value, and integers hash much faster than Fractions). The exponents are
    eps * u_v / (2 Delta) = `em_exponents`, made once per distinct score."""
    factor = epsilon / (2 * sensitivity)
    common = _common_denominator(denominators)
    if common is None:  # the Fraction route
        scores = tuple(Fraction(n, d) for n, d in zip(numerators, denominators, strict=True))
        return ExponentialWeights(views=views, exponents=em_exponents(scores, epsilon, sensitivity))
    # x_v = (f_n u_v) / f_d with u_v = scaled_v / common: numerators f_n scaled_v over f_d common
    # (f_n > 0, so the order of the scores is the order of the exponents).
    f_n, f_d = factor.numerator, factor.denominator
    scaled = [n * (common // d) * f_n for n, d in zip(numerators, denominators, strict=True)]
    denominator = f_d * common
    made: dict[int, Fraction] = {}
    for value in scaled:
        if value not in made:
            made[value] = Fraction(value, denominator)  # == factor * u_v, reduced
    exponents = tuple([made[value] for value in scaled])
    return ExponentialWeights._of_checked(views, exponents, scaled, denominator)


def exponential_mechanism(
    views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
) -> ExponentialWeights:
    """Eq. (7) over a common vocabulary (a pure function; memoized on its inputs). The
    arguments are checked first (InputError; the planner checks them as C3 before)."""
    require_em_arguments(views, scores, epsilon, sensitivity)
    numerators = tuple([score.numerator for score in scores])
    denominators = tuple([score.denominator for score in scores])
    return _exponential_mechanism(tuple(views), numerators, denominators, epsilon, sensitivity)


def argmax_view(views: tuple[str, ...], scores: Sequence[Fraction]) -> PointMass:
    """Deterministic highest-score selection (first index on ties): NOT private (C3)."""
    best = max(range(len(views)), key=lambda i: (scores[i], -i))
    return PointMass(views=views, view=views[best])
