"""B.4: the posterior-odds interpretation.

For a generated adjacent pair, a random prior Pr[H = 1] in (0, 1) and a random event O
(a set of augmented transcripts, or of ordinary transcripts) with positive probability
under both stores, Bayes' rule computed explicitly gives

    e^{-B_a} <= posterior odds / prior odds <= e^{B_a},

certified with interval arithmetic against the exact rational B_a; and the odds factor
equals the likelihood ratio Pr[O | M] / Pr[O | M'] (to 50 digits), which is the identity
the appendix derives.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
from hypothesis import given, note
from hypothesis import strategies as st

from dpmem_ref.mechanism.em import iv_precision
from proofs_as_tests import transcripts as tx
from proofs_as_tests.strategies import cases

PRIORS = st.sampled_from([Fraction(1, 100), Fraction(1, 10), Fraction(1, 3), Fraction(1, 2), Fraction(9, 10), Fraction(999, 1000)])


def _iv(value):
    radius = mpmath.mpf(10) ** (-55) * (1 + abs(value))
    return mpmath.iv.mpf([value - radius, value + radius])


def _ivq(x: Fraction):
    return mpmath.iv.mpf(x.numerator) / x.denominator


@given(cases(), PRIORS, st.data())
def test_posterior_odds_move_at_most_e_b(case, prior, data):
    note(repr(case))
    leaves = tx.enumerate_joint(case)
    cap = case.interface.policy.attribute(case.attribute).cap
    ordinary = data.draw(st.booleans(), label="ordinary event")
    if ordinary:
        keys = sorted({leaf.ordinary for leaf in leaves}, key=repr)
        chosen = set(data.draw(st.lists(st.sampled_from(keys), min_size=1, unique=True), label="event"))
        event = [leaf for leaf in leaves if leaf.ordinary in chosen]
    else:
        picks = data.draw(st.lists(st.integers(0, len(leaves) - 1), min_size=1, unique=True), label="event")
        event = [leaves[k] for k in picks]
    event = [leaf for leaf in event if leaf.logp_a is not None and leaf.logp_b is not None]
    if not event:
        return
    with mpmath.workdps(70), iv_precision(70):
        p_a = sum((mpmath.iv.exp(_iv(leaf.logp_a)) for leaf in event), mpmath.iv.mpf(0))
        p_b = sum((mpmath.iv.exp(_iv(leaf.logp_b)) for leaf in event), mpmath.iv.mpf(0))
        h1, h0 = _ivq(prior), _ivq(1 - prior)
        evidence = p_a * h1 + p_b * h0
        post1, post0 = p_a * h1 / evidence, p_b * h0 / evidence
        factor = (post1 / post0) / (h1 / h0)
        log_factor = mpmath.iv.log(factor)
        assert tx.certified_le(log_factor, cap)
        assert tx.certified_le(-log_factor, cap)
        # The appendix's identity: odds factor = likelihood ratio.
        ratio = p_a / p_b
        assert abs(mpmath.mpf(factor.mid) - mpmath.mpf(ratio.mid)) <= mpmath.mpf(10) ** -45 * mpmath.mpf(ratio.mid)


@given(st.sampled_from([Fraction(1, 2), Fraction(1)]), PRIORS)
def test_tightness_odds_factor_nearly_e_b(cap, prior):
    """The extreme 256-view pair with one charge of eps = B_a: the event {v_0 released}
    moves the odds by more than e^{0.99 B_a} (and never by e^{B_a})."""
    from dpmem_ref import TurnRecord
    from dpmem_ref.analysis import replay_transcript
    from proofs_as_tests.test_theorem1 import _extreme_interface

    interface, store, other = _extreme_interface(cap, 1)
    turn = TurnRecord(query="q", views=(("g", "g.gen"),), control=(("g", "released"),), response="",
                      admitted=(True,), charges=())
    with mpmath.workdps(70), iv_precision(70):
        p_a = mpmath.iv.exp(_iv(replay_transcript(interface, store, [turn]).log_probability))
        p_b = mpmath.iv.exp(_iv(replay_transcript(interface, other, [turn]).log_probability))
        h1, h0 = _ivq(prior), _ivq(1 - prior)
        evidence = p_a * h1 + p_b * h0
        factor = ((p_a * h1 / evidence) / (p_b * h0 / evidence)) / (h1 / h0)
        log_factor = mpmath.iv.log(factor)
    assert tx.certified_le(log_factor, cap)
    assert tx.lower_fraction(log_factor) > cap * Fraction(99, 100)
