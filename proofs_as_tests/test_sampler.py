"""The exact EM sampler: its empirical law matches Eq. (7), and it is the kernel's path.

- Seeded chi-square: N exact draws of `ExponentialWeights.sample` against Eq. (7)
  computed independently at 60 digits; the test fails below p = 1e-6 (deterministic
  under the ci profile: every seed is fixed).
- The same at large eps (x12: a dominant view, the score-adaptive bucketed proposal), and
  for the batch `sample_many` (one exact integer table over the views).
- `bernoulli_exp_minus(gamma)` against exp(-gamma) for gamma in and beyond [0, 1].
- Code path: the views `run_turn` releases are exactly what `plan.distribution.sample`
  draws from the same tape, consuming exactly the same integers.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
from hypothesis import given, note
from hypothesis import strategies as st

from dpmem_ref import InterfaceState, RecordingSource, SeededRandomSource, TapeSource, bernoulli_exp_minus, run_turn
from dpmem_ref.mechanism.construction import exponential_mechanism
from proofs_as_tests.strategies import cases, score_pairs

P_MIN = mpmath.mpf("1e-6")


def eq7(scores, eps, delta):
    with mpmath.workdps(60):
        e = mpmath.mpf(eps.numerator) / eps.denominator
        d = mpmath.mpf(delta.numerator) / delta.denominator
        weights = [mpmath.exp(e * (mpmath.mpf(u.numerator) / u.denominator) / (2 * d)) for u in scores]
        z = mpmath.fsum(weights)
        return [w / z for w in weights]


def chi_square_p(counts, probabilities):
    n = sum(counts)
    stat = sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, probabilities, strict=True))
    dof = len(counts) - 1
    return mpmath.gammainc(mpmath.mpf(dof) / 2, stat / 2, mpmath.inf, regularized=True)


@given(score_pairs(), st.integers(0, 2**32 - 1))
def test_empirical_law_matches_eq7(pair, seed):
    u, _, eps, delta = pair
    eps = eps * 2  # sharper laws make a biased sampler easier to see
    names = tuple(f"v{k}" for k in range(len(u)))
    law = exponential_mechanism(names, u, eps, delta)
    source = SeededRandomSource(seed)
    n = 3000
    counts = dict.fromkeys(names, 0)
    for _ in range(n):
        counts[law.sample(source)] += 1
    p = chi_square_p([counts[v] for v in names], eq7(u, eps, delta))
    note(f"u={u} eps={eps} Delta={delta} counts={counts} p={p}")
    assert p > P_MIN


@given(score_pairs(max_views=6), st.integers(0, 2**32 - 1), st.sampled_from([Fraction(12), Fraction(40)]))
def test_empirical_law_matches_eq7_at_large_eps(pair, seed, sharpen):
    u, _, eps, delta = pair
    eps = eps * sharpen  # spread up to eps/(2 Delta) * 40
    u = u * 3  # 6..18 views: the uniform proposal up to 8, the bucketed one beyond
    names = tuple(f"v{k}" for k in range(len(u)))
    law = exponential_mechanism(names, u, eps, delta)
    source = SeededRandomSource(seed)
    single = dict.fromkeys(names, 0)
    for _ in range(3000):
        single[law.sample(source)] += 1
    batch = dict.fromkeys(names, 0)
    for view in law.sample_many(3000, source):
        batch[view] += 1
    expected = eq7(u, eps, delta)
    # Views expected below 5 draws are pooled (at large eps most of the mass is on one view).
    for counts in (single, batch):
        kept = [(counts[v], p) for v, p in zip(names, expected, strict=True) if 3000 * p >= 5]
        rest = (3000 - sum(c for c, _ in kept), 1 - mpmath.fsum(p for _, p in kept))
        if 3000 * rest[1] >= 5:
            kept.append(rest)
        elif kept:  # too small to stand alone: fold it into the least likely kept cell
            smallest = min(range(len(kept)), key=lambda k: kept[k][1])
            kept[smallest] = (kept[smallest][0] + rest[0], kept[smallest][1] + rest[1])
        cells = kept
        note(f"u={u} eps={eps} Delta={delta} counts={counts}")
        if len(cells) >= 2:  # one cell (all the mass on one view up to < 5 draws) tests nothing
                assert chi_square_p([c for c, _ in cells], [p for _, p in cells]) > P_MIN


@given(st.sampled_from([Fraction(0), Fraction(1, 7), Fraction(1, 2), Fraction(1), Fraction(5, 3), Fraction(3)]),
       st.integers(0, 2**32 - 1))
def test_bernoulli_exp_minus_frequency(gamma, seed):
    source = SeededRandomSource(seed)
    n = 4000
    hits = sum(bernoulli_exp_minus(gamma, source) for _ in range(n))
    with mpmath.workdps(30):
        p = mpmath.exp(-mpmath.mpf(gamma.numerator) / gamma.denominator)
        if gamma == 0:
            assert hits == n
            return
        assert chi_square_p([hits, n - hits], [p, 1 - p]) > P_MIN


@given(cases(), st.integers(0, 2**32 - 1))
def test_run_turn_draws_are_the_plans_draws(case, seed):
    note(repr(case))
    state = InterfaceState.initial(case.interface)
    recorder = RecordingSource(SeededRandomSource(seed))
    for turn in range(4):
        query = case.interface.queries[turn % len(case.interface.queries)]
        start = len(recorder.tape)
        result = run_turn(case.interface, state, query, case.store_a, recorder)
        tape = TapeSource([value for _, value in recorder.tape[start:]])
        drawn = tuple((plan.slot, plan.distribution.sample(tape)) for plan in result.plans)
        assert drawn == result.record.views
        assert tape.consumed == len(recorder.tape) - start
        state = result.state
