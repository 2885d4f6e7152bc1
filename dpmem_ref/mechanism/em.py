"""The exponential mechanism (Eq. 7): exact description, exact likelihoods, exact sampling.

A release distribution is described exactly, then *consumed* three ways: sampled
(exact, integer randomness only), evaluated (mpmath at high precision), or enclosed
(mpmath interval arithmetic for certificates). The sampler, the auditor and the proofs
therefore read one description and cannot drift apart.

EM weights are exp(x_v) with rational exponents x_v = eps * u_v / (2 Delta). The exact
Bernoulli samplers and proposal rounds the sampler runs are `dpmem_ref.mechanism.bernoulli`;
the construction from scores (`exponential_mechanism`, the C3 check of its inputs, the
argmax of a broken selector) is `dpmem_ref.mechanism.construction`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from math import gcd, lcm
from operator import itemgetter
from typing import Any, Protocol

import attrs
import mpmath

from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.bernoulli import _bernoulli_exp_minus_split, _split_gamma, bucket_proposal, bucketed_round
from dpmem_ref.mechanism.em_sampler import build_table
from dpmem_ref.mechanism.randomness import RandomSource

DEFAULT_DPS = 60
# The uniform proposal serves distributions whose largest gap x_max - x_v is at most 1 (a
# round succeeds w.p. >= exp(-1)) or with at most 8 views (<= 8 expected rounds, since the
# top view is always accepted); it builds no table, which matters for a fresh turn.
UNIFORM_PROPOSAL_MAX_SPREAD = Fraction(1)
UNIFORM_PROPOSAL_MAX_VIEWS = 8
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
