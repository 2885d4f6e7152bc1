"""The exponential mechanism (Eq. 7): exact description, exact likelihoods, exact sampling.

A release distribution is described exactly, then *consumed* three ways: sampled
(exact, integer randomness only), evaluated (mpmath at high precision), or enclosed
(mpmath interval arithmetic for certificates). The sampler, the auditor and the proofs
therefore read one description and cannot drift apart.

EM weights are exp(x_v) with rational exponents x_v = eps * u_v / (2 Delta).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from math import gcd, lcm
from operator import itemgetter
from typing import Any, Protocol

import attrs
import mpmath

from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.rational import require_em_arguments
from dpmem_ref.mechanism.em_sampler import CHUNK_BITS, TABLE_BITS, ExactTable, build_table
from dpmem_ref.mechanism.randomness import RandomSource

DEFAULT_DPS = 60
# The uniform proposal serves distributions whose largest gap x_max - x_v is at most 1 (a
# round succeeds w.p. >= exp(-1)) or with at most 8 views (<= 8 expected rounds, since the
# top view is always accepted); it builds no table, which matters for a fresh turn.
UNIFORM_PROPOSAL_MAX_SPREAD = Fraction(1)
UNIFORM_PROPOSAL_MAX_VIEWS = 8
BUCKETS_PER_UNIT = 4  # the bucketed proposal groups gaps by floor(4 gap)
IV_DPS = 70  # decimal digits of every interval enclosure of a log-probability (the exact engine uses the same)


@contextmanager
def iv_precision(dps: int) -> Iterator[None]:
    """mpmath's interval context has no workdps: set and restore its precision."""
    saved = mpmath.iv.dps
    mpmath.iv.dps = max(saved, dps)
    try:
        yield
    finally:
        mpmath.iv.dps = saved


def _iv_fraction(value: Fraction) -> mpmath.ctx_iv.ivmpf:
    return mpmath.iv.mpf(value.numerator) / mpmath.iv.mpf(value.denominator)


def _mpf_fraction(value: Fraction) -> mpmath.mpf:
    return mpmath.mpf(value.numerator) / value.denominator


class ReleaseDistribution(Protocol):
    """The exact conditional distribution of one slot-level release."""

    @property
    def views(self) -> tuple[str, ...]: ...

    def log_probability(self, view: str) -> mpmath.mpf:
        """log Pr[v]; -inf outside the support. Evaluated at the current mp precision."""

    def log_probability_interval(self, view: str) -> mpmath.ctx_iv.ivmpf | None:
        """An interval enclosing log Pr[v]; None outside the support."""

    def support(self) -> tuple[str, ...]:
        """Views with positive probability."""

    def sample(self, source: RandomSource) -> str:
        """Draw one view exactly."""


@attrs.frozen
class PointMass:
    """A deterministic release (generic fallback, or a broken argmax selector)."""

    views: tuple[str, ...]
    view: str

    def log_probability(self, view: str) -> mpmath.mpf:
        return mpmath.mpf(0) if view == self.view else mpmath.mpf("-inf")

    def log_probability_interval(self, view: str) -> mpmath.ctx_iv.ivmpf | None:
        return mpmath.iv.mpf(0) if view == self.view else None

    def support(self) -> tuple[str, ...]:
        return (self.view,)

    def sample(self, source: RandomSource) -> str:
        return self.view

    def sample_many(self, count: int, source: RandomSource) -> tuple[str, ...]:
        return (self.view,) * count


@attrs.frozen(repr=False)
class ExponentialWeights:
    """Pr[v] proportional to exp(x_v) with exact rational exponents x_v (Eq. 7).

    The exponents are derived from internal scores, so the repr hides them.
    """

    views: tuple[str, ...]
    exponents: tuple[Fraction, ...]
    # Acceptance probabilities of the exact sampler are exp(-gap_v), gap_v = x_max - x_v.
    # Made on first use from `_gap_parts` (`_gap_fractions`): the uniform sampler needs only the parts.
    _gaps: tuple[Fraction, ...] | None = attrs.field(init=False, eq=False, hash=False)
    _bucketed: bool = attrs.field(init=False, eq=False, hash=False)  # use the score-adaptive proposal
    _gap_parts: tuple[tuple[int, int, int], ...] = attrs.field(init=False, eq=False, hash=False)
    # log sum_w exp(x_w - x_max), per working precision: shared by every view's likelihood.
    _log_sums: dict[tuple[str, int], Any] = attrs.field(init=False, eq=False, hash=False, factory=dict)
    # The samplers' exact integer tables, built on first use (a function of the exponents).
    _tables: dict[str, Any] = attrs.field(init=False, eq=False, hash=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        if len(self.views) != len(self.exponents) or not self.views:
            raise InputError("exponential mechanism", "one exponent per view", len(self.exponents))
        for index, exponent in enumerate(self.exponents):
            if not isinstance(exponent, Fraction):
                raise InputError(
                    f"exponential mechanism exponent #{index}", "an exact rational (Fraction)", type(exponent).__name__
                )
        self._derive(*_over_common_denominator(self.exponents))

    @classmethod
    def _of_checked(
        cls, views: tuple[str, ...], exponents: tuple[Fraction, ...], numerators: Sequence[int], denominator: int
    ) -> ExponentialWeights:
        """The record `cls(views=views, exponents=exponents)` builds, from arguments already
        checked (`exponential_mechanism`) and the exponents' integer form x_v =
        numerators[v] / denominator (one common denominator), without recomputing it."""
        self = object.__new__(cls)
        object.__setattr__(self, "views", views)
        object.__setattr__(self, "exponents", exponents)
        object.__setattr__(self, "_log_sums", {})
        object.__setattr__(self, "_tables", {})
        self._derive(numerators, denominator)
        return self

    def _derive(self, numerators: Sequence[int] | None, denominator: int) -> None:
        """The sampler's fields from the exponents x_v = numerators[v] / denominator (None:
        no small common denominator, use the Fractions). Integers only: gap_v = x_max - x_v
        is (top - numerators[v]) / denominator, split into (whole, numerator, denominator)
        exactly as `_split_gamma` splits the reduced Fraction (once per distinct value).
        The gaps as Fractions are made on first use (`_gap_fractions`)."""
        if numerators is None:
            top = max(self.exponents)
            gaps = tuple(top - x for x in self.exponents)
            object.__setattr__(self, "_gaps", gaps)
            bucketed = len(self.views) > UNIFORM_PROPOSAL_MAX_VIEWS and max(gaps) > UNIFORM_PROPOSAL_MAX_SPREAD
            object.__setattr__(self, "_bucketed", bucketed)
            object.__setattr__(self, "_gap_parts", tuple(_split_gamma(gap) for gap in gaps))
            return
        highest = max(numerators)
        object.__setattr__(self, "_gaps", None)
        # spread = (top - min) / denominator > 1 (UNIFORM_PROPOSAL_MAX_SPREAD), on integers
        bucketed = len(self.views) > UNIFORM_PROPOSAL_MAX_VIEWS and highest - min(numerators) > denominator
        object.__setattr__(self, "_bucketed", bucketed)
        parts: dict[int, tuple[int, int, int]] = {}
        for numerator in numerators:
            if numerator not in parts:
                whole, rest = divmod(highest - numerator, denominator)
                common = gcd(rest, denominator)  # gcd(0, d) = d: a zero rest is 0/1, as Fraction(0)
                parts[numerator] = (whole, rest // common, denominator // common)
        object.__setattr__(self, "_gap_parts", tuple([parts[numerator] for numerator in numerators]))

    def _gap_fractions(self) -> tuple[Fraction, ...]:
        """gap_v = x_max - x_v as exact Fractions (from the integer split: whole + n / d)."""
        gaps = self._gaps
        if gaps is None:
            made: dict[tuple[int, int, int], Fraction] = {}
            for split in self._gap_parts:
                if split not in made:
                    whole, numerator, denominator = split
                    made[split] = Fraction(whole * denominator + numerator, denominator)
            gaps = tuple([made[split] for split in self._gap_parts])
            object.__setattr__(self, "_gaps", gaps)
        return gaps

    def __repr__(self) -> str:
        return f"ExponentialWeights(views={self.views!r}, <private exponents>)"

    def _log_normalizer(self) -> mpmath.mpf:
        key = ("mp", mpmath.mp.prec)
        log_sum = self._log_sums.get(key)
        if log_sum is None:
            log_sum = mpmath.log(mpmath.fsum(mpmath.exp(-_mpf_fraction(gap)) for gap in self._gap_fractions()))
            self._log_sums[key] = log_sum
        return _mpf_fraction(max(self.exponents)) + log_sum

    def log_probability(self, view: str) -> mpmath.mpf:
        if view not in self.views:
            return mpmath.mpf("-inf")
        return _mpf_fraction(self.exponents[self.views.index(view)]) - self._log_normalizer()

    def probabilities(self) -> tuple[mpmath.mpf, ...]:
        log_z = self._log_normalizer()
        return tuple(mpmath.exp(_mpf_fraction(x) - log_z) for x in self.exponents)

    def log_probability_interval(self, view: str) -> mpmath.ctx_iv.ivmpf | None:
        if view not in self.views:
            return None
        with iv_precision(IV_DPS):
            key = ("iv", mpmath.iv.prec)
            log_sum = self._log_sums.get(key)
            if log_sum is None:
                total = mpmath.iv.mpf(0)
                for gap in self._gap_fractions():
                    total += mpmath.iv.exp(-_iv_fraction(gap))
                log_sum = mpmath.iv.log(total)
                self._log_sums[key] = log_sum
            return -_iv_fraction(self._gap_fractions()[self.views.index(view)]) - log_sum

    def support(self) -> tuple[str, ...]:
        return self.views

    def sample(self, source: RandomSource) -> str:
        """One exact draw from Eq. (7); every decision compares integers.

        Spread (largest gap) <= 1, or at most 8 views: propose a view uniformly, accept it
        with probability exp(-gap_v) (the Canonne-Kamath-Steinke Bernoulli below). A round
        yields v with probability exp(-gap_v) / n, so the accepted view has probability
        exp(x_v - x_max) / sum_w exp(x_w - x_max): Eq. (7). A round succeeds with
        probability >= max(exp(-spread), 1/n).

        Otherwise (one dominant view among many at large eps) the uniform proposal would need
        up to n rounds, so the proposal adapts to the scores. Views are bucketed by
        k_v = floor(4 gap_v); a round picks bucket k with probability proportional to
        |B_k| exp(-k/4) (`em_sampler.ExactTable`, exact integer table), a view uniformly in
        it, and accepts with Bernoulli(exp(-(gap_v - k/4))). A round yields v with probability
        c * |B_k| exp(-k/4) / |B_k| * exp(-(gap_v - k/4)) = c * exp(-gap_v) (one constant
        c), so again Eq. (7); a round succeeds with probability >= exp(-1/4) (1 - 1e-16).

        Which proposal runs is a function of the distribution alone, so a seeded source or a
        recorded tape reproduces the draw.
        """
        if self._bucketed:
            return self.views[self._bucketed_draw(source)]
        # `uniform_proposal_round` until it yields, inlined: this is the hot path of a turn.
        parts = self._gap_parts  # each gap split into integers once (no Fraction work per round)
        count = len(parts)
        while True:
            index = source.randbelow(count)
            if _bernoulli_exp_minus_split(*parts[index], source):
                return self.views[index]

    def sample_many(self, count: int, source: RandomSource) -> tuple[str, ...]:
        """`count` independent exact draws from Eq. (7), for experiments (a batch).

        One exact table over the views (`em_sampler.build_table` with weights exp(-gap_v),
        built once per distribution) and one uniform integer per block of draws whose
        64-bit digits are the rounds' slots; see `ExactTable.draw_many`. Same law as
        `sample`, different use of the random tape.
        """
        table = self._tables.get("views")
        if table is None:
            table = self._tables["views"] = build_table([1] * len(self.views), self._gap_fractions())
        indices = table.draw_many(count, source)
        if count == 1:
            return (self.views[indices[0]],)
        return tuple(itemgetter(*indices)(self.views)) if indices else ()

    def _bucketed_draw(self, source: RandomSource) -> int:
        proposal = self._tables.get("buckets")
        if proposal is None:
            proposal = self._tables["buckets"] = bucket_proposal(self._gap_fractions())
        gaps = self._gap_fractions()
        while True:
            index = bucketed_round(proposal, gaps, source)
            if index is not None:
                return index


def uniform_proposal_round(gaps: tuple[Fraction, ...], source: RandomSource) -> int | None:
    """One round: view v with probability exp(-gap_v) / n, else None."""
    index = source.randbelow(len(gaps))
    return index if bernoulli_exp_minus(gaps[index], source) else None


BucketProposal = tuple[ExactTable, tuple[tuple[int, ...], ...], tuple[int, ...]]


def bucketed_round(proposal: BucketProposal, gaps: tuple[Fraction, ...], source: RandomSource) -> int | None:
    """One round: view v with probability (scale / table bound) * exp(-gap_v), else None."""
    table, members, keys = proposal
    bucket = table.round(source)
    if bucket is None:
        return None
    group = members[bucket]
    index = group[source.randbelow(len(group))] if len(group) > 1 else group[0]
    gap = gaps[index]
    # gap - k/4 = (4 p - k q) / (4 q), in [0, 1/4)
    remainder = BUCKETS_PER_UNIT * gap.numerator - keys[bucket] * gap.denominator
    return index if _bernoulli_exp_minus_unit(remainder, BUCKETS_PER_UNIT * gap.denominator, source) else None


def bucket_proposal(gaps: tuple[Fraction, ...], table_bits: int = TABLE_BITS, chunk_bits: int = CHUNK_BITS) -> BucketProposal:
    """Views grouped by floor(4 gap), and the exact table with weights |B_k| exp(-k/4)."""
    members: dict[int, list[int]] = {}
    for index, gap in enumerate(gaps):
        members.setdefault(BUCKETS_PER_UNIT * gap.numerator // gap.denominator, []).append(index)
    keys = tuple(sorted(members))
    table = _bucket_table(keys, tuple(len(members[k]) for k in keys), table_bits, chunk_bits)
    return table, tuple(tuple(members[k]) for k in keys), keys


@lru_cache(maxsize=4096)
def _bucket_table(keys: tuple[int, ...], counts: tuple[int, ...], table_bits: int, chunk_bits: int) -> ExactTable:
    # A function of the bucket shape only: turns with recurring shapes share one table.
    return build_table(counts, [Fraction(k, BUCKETS_PER_UNIT) for k in keys], table_bits, chunk_bits)


def bernoulli_rational(probability: Fraction, source: RandomSource) -> bool:
    """Exact Bernoulli(p) for rational p in [0, 1]: a uniform integer below the denominator."""
    return source.randbelow(probability.denominator) < probability.numerator


def bernoulli_exp_minus(gamma: Fraction, source: RandomSource) -> bool:
    """Exact Bernoulli(exp(-gamma)) for rational gamma >= 0.

    Canonne, Kamath, Steinke (2020), Algorithm 1: for gamma in [0, 1], draw
    A_k ~ Bernoulli(gamma / k) for k = 1, 2, ... until the first failure at K;
    Pr[K odd] = exp(-gamma). For gamma > 1, exp(-gamma) = exp(-1)^floor(gamma) *
    exp(-(gamma - floor(gamma))).
    """
    if isinstance(gamma, bool) or not isinstance(gamma, Fraction | int):
        raise InputError("gamma", "a non-negative exact rational (Fraction or int)", type(gamma).__name__)
    if gamma < 0:
        raise InputError("gamma", "a non-negative rational", gamma)
    return _bernoulli_exp_minus_split(*_split_gamma(gamma), source)


def _split_gamma(gamma: Fraction) -> tuple[int, int, int]:
    """gamma = whole + numerator / denominator with the fraction in [0, 1), as integers."""
    whole = gamma.numerator // gamma.denominator
    rest = gamma - whole
    return whole, rest.numerator, rest.denominator


def _bernoulli_exp_minus_split(whole: int, numerator: int, denominator: int, source: RandomSource) -> bool:
    """`bernoulli_exp_minus` of gamma = whole + numerator / denominator (`_split_gamma`):
    integers only, so a distribution splits its gaps once and the hot path does no
    Fraction arithmetic. Draws exactly what `bernoulli_exp_minus(gamma)` draws."""
    if whole == 0 and numerator == 0:
        return True
    for _ in range(whole):
        if not _bernoulli_exp_minus_unit(1, 1, source):
            return False
    return _bernoulli_exp_minus_unit(numerator, denominator, source)


def _bernoulli_exp_minus_unit(numerator: int, denominator: int, source: RandomSource) -> bool:
    """Bernoulli(exp(-numerator / denominator)) for 0 <= numerator / denominator <= 1."""
    k = 1
    # Bernoulli(gamma / k) = [randbelow(denominator * k) < numerator].
    while source.randbelow(denominator * k) < numerator:
        k += 1
    return k % 2 == 1


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


# The integer route of a distribution's construction keeps its common denominator below
# this many bits; past it (many large coprime denominators) the Fractions are used directly.
_MAX_COMMON_DENOMINATOR_BITS = 256


def _common_denominator(denominators: Sequence[int]) -> int | None:
    """lcm of the (distinct) denominators, or None once it passes the bound above."""
    common = 1
    for denominator in set(denominators):
        common = lcm(common, denominator)
        if common.bit_length() > _MAX_COMMON_DENOMINATOR_BITS:
            return None
    return common


def _over_common_denominator(values: Sequence[Fraction]) -> tuple[list[int] | None, int]:
    """(numerators, denominator) with values[v] = numerators[v] / denominator exactly, or
    (None, 0) when the common denominator would be large."""
    denominators = [value.denominator for value in values]
    common = _common_denominator(denominators)
    if common is None:
        return None, 0
    return [value.numerator * (common // d) for value, d in zip(values, denominators, strict=True)], common


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
