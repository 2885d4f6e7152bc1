"""Exact Bernoulli samplers and the proposal rounds of the exponential mechanism's sampler.

Canonne, Kamath, Steinke (2020), "The Discrete Gaussian for Differential Privacy",
Algorithm 1: Bernoulli(exp(-gamma)) for rational gamma >= 0 from uniform integers alone, no
floating point. `dpmem_ref.mechanism.em.ExponentialWeights.sample` runs the rounds below
(the uniform proposal, inlined there, and the bucketed one over `em_sampler`'s exact table).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.em_sampler import CHUNK_BITS, TABLE_BITS, ExactTable, build_table
from dpmem_ref.mechanism.randomness import RandomSource

BUCKETS_PER_UNIT = 4  # the bucketed proposal groups gaps by floor(4 gap)


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
