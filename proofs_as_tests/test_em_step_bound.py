"""Per-step EM bound (Case 3 of the proof of Theorem 1) and its tightness twin.

For score vectors u, u' in [0, 1]^n (n = 2..4) with ||u - u'||_inf <= Delta:
- the kernel's EM exponents are exactly eps * u_v / (2 Delta) (rational identity);
- its probabilities equal Eq. (7) evaluated independently at 60 digits;
- the ratio factors as exp(eps (u_v - u'_v) / (2 Delta)) * Z'/Z (the proof's two
  factors), and is certified <= e^eps (interval upper end vs the exact rational eps).
Tightness twin: the pair u = Delta * e_v, u' = Delta * (1 - e_v) makes the first factor
exactly e^{eps/2} and the second (1 + (n-1) e^{eps/2}) / (e^{eps/2} + n - 1), so the
ratio exceeds e^{eps/2} for n >= 3 and, at n = 256 views, exceeds e^{0.99 eps}: the
bound e^eps cannot be lowered to e^{0.99 eps}.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
from hypothesis import event, given, note, target
from hypothesis import strategies as st

from dpmem_ref.mechanism.construction import exponential_mechanism
from dpmem_ref.mechanism.em import iv_precision
from proofs_as_tests import transcripts as tx
from proofs_as_tests.strategies import EPSILONS, score_pairs
from proofs_as_tests.strategies.core import near_bound_score_pairs

DPS = 60


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def eq7(scores, eps, delta):
    """Eq. (7) computed here, independently of the kernel."""
    weights = [mpmath.exp(_mp(eps) * _mp(u) / (2 * _mp(delta))) for u in scores]
    z = mpmath.fsum(weights)
    return [w / z for w in weights], z


def views(n):
    return tuple(f"v{k}" for k in range(n))


@given(st.integers(0, 1).flatmap(lambda k: near_bound_score_pairs() if k == 0 else score_pairs()))
def test_em_ratio_at_most_e_eps(pair):
    u, u2, eps, delta = pair
    note(f"u={u} u'={u2} eps={eps} Delta={delta}")
    gap = max(abs(x - y) for x, y in zip(u, u2, strict=True))
    event("||u - u'|| = Delta" if gap == delta else "||u - u'|| < Delta")
    worst = Fraction(0)
    names = views(len(u))
    em_a = exponential_mechanism(names, u, eps, delta)
    em_b = exponential_mechanism(names, u2, eps, delta)
    assert em_a.exponents == tuple(eps * x / (2 * delta) for x in u)
    assert em_b.exponents == tuple(eps * x / (2 * delta) for x in u2)
    with mpmath.workdps(DPS), iv_precision(70):
        pa, za = eq7(u, eps, delta)
        pb, zb = eq7(u2, eps, delta)
        for kernel, independent in ((em_a.probabilities(), pa), (em_b.probabilities(), pb)):
            for x, y in zip(kernel, independent, strict=True):
                assert abs(x - y) <= mpmath.mpf(10) ** -50 * y
        for k, view in enumerate(names):
            # The proof's factorisation, to 50 digits.
            first = mpmath.exp(_mp(eps) * (_mp(u[k]) - _mp(u2[k])) / (2 * _mp(delta)))
            assert abs(pa[k] / pb[k] - first * zb / za) <= mpmath.mpf(10) ** -50 * (pa[k] / pb[k])
            assert first <= mpmath.exp(_mp(eps) / 2) * (1 + mpmath.mpf(10) ** -55)
            assert zb <= mpmath.exp(_mp(eps) / 2) * za * (1 + mpmath.mpf(10) ** -55)
            # Certified: the kernel's interval log ratio is <= eps, both directions.
            ab = em_a.log_probability_interval(view) - em_b.log_probability_interval(view)
            assert tx.certified_le(ab, eps)
            assert tx.certified_le(-ab, eps)
            if not tx.is_exact_zero(ab):
                worst = max(worst, abs(tx.lower_fraction(ab) or Fraction(0)), abs(tx.upper_fraction(ab) or Fraction(0)))
    target(float(worst / eps), label="step loss / eps")


def extreme_pair(n: int, delta: Fraction):
    u = (delta,) + (Fraction(0),) * (n - 1)
    u2 = (Fraction(0),) + (delta,) * (n - 1)
    return u, u2


@given(st.integers(2, 12), st.sampled_from(EPSILONS), st.sampled_from((Fraction(1, 5), Fraction(3, 5), Fraction(1))))
def test_tightness_twin_two_factors(n, eps, delta):
    u, u2 = extreme_pair(n, delta)
    names = views(n)
    em_a = exponential_mechanism(names, u, eps, delta)
    em_b = exponential_mechanism(names, u2, eps, delta)
    with mpmath.workdps(DPS):
        half = mpmath.exp(_mp(eps) / 2)
        z_ratio = (1 + (n - 1) * half) / (half + n - 1)
        ratio = mpmath.exp(em_a.log_probability("v0") - em_b.log_probability("v0"))
        assert abs(ratio - half * z_ratio) <= mpmath.mpf(10) ** -50 * ratio
        if n >= 3:
            assert ratio > half  # the Z factor is needed: e^{eps/2} alone is not a bound
        assert ratio < mpmath.exp(_mp(eps))


@given(st.sampled_from((Fraction(1, 10), Fraction(1, 3), Fraction(1, 2))))
def test_tightness_twin_approaches_e_eps(eps):
    n = 256  # the largest vocabulary the kernel accepts
    u, u2 = extreme_pair(n, Fraction(1))
    names = views(n)
    em_a = exponential_mechanism(names, u, eps, Fraction(1))
    em_b = exponential_mechanism(names, u2, eps, Fraction(1))
    with iv_precision(70):
        ab = em_a.log_probability_interval("v0") - em_b.log_probability_interval("v0")
    assert tx.certified_le(ab, eps)
    assert tx.lower_fraction(ab) > eps * Fraction(99, 100)  # holds at eps, certified to fail at 0.99 eps
