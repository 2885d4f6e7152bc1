"""Lemma 1 (zero cost for an uncharged attribute), as an exact identity.

At every slot-level operation reached by any transcript of a generated deployment, for
the adjacent pair M ~_a M' at the same prefix: if the selection is admitted and
a is not in the charge set, then (i) the read set misses I_a (recomputed here from the
groups, not through the kernel's Gamma*), (ii) the internal score vectors are equal as
exact rationals, (iii) the EM exponents are equal, so the two release laws are the same
law (decided on rationals), and (iv) the 60-digit probabilities are identical numbers.
No tolerance anywhere: this is an equality claim.
"""

from __future__ import annotations

import mpmath
from hypothesis import given, note

from proofs_as_tests import transcripts as tx
from proofs_as_tests.strategies import cases


@given(cases())
def test_uncharged_admitted_selection_has_identical_law(case):
    note(repr(case))
    group = case.interface.policy.attribute(case.attribute).group
    seen = []

    def visit(plan_a, plan_b, prefix):
        # C4: the same prefix fixes the same read set, charge set and eps on both sides.
        assert plan_a.public_shape == plan_b.public_shape
        if not plan_a.admitted or case.attribute in plan_a.charge_set:
            return
        seen.append(plan_a.slot)
        # C2 gives R & I_a = {} whenever a is not charged.
        assert not (plan_a.read.positions & group), "a read touching I_a was not charged to a"
        assert plan_a.scores == plan_b.scores
        assert plan_a.distribution.views == plan_b.distribution.views
        assert plan_a.distribution.exponents == plan_b.distribution.exponents
        assert tx.same_distribution(plan_a.distribution, plan_b.distribution)
        with mpmath.workdps(60):
            assert plan_a.distribution.probabilities() == plan_b.distribution.probabilities()
            for view in plan_a.distribution.views:
                assert plan_a.distribution.log_probability(view) == plan_b.distribution.log_probability(view)

    tx.enumerate_joint(case, visit=visit)
    note(f"uncharged admitted operations checked: {len(seen)}")


@given(cases(multi_group=True))
def test_reads_outside_every_differing_group_are_free(case):
    """The same identity for multi-group pairs: any admitted read that misses every
    differing position sees equal read-set contents, hence the same law."""
    note(repr(case))
    differing = {i for i, (x, y) in enumerate(zip(case.store_a.items, case.store_b.items, strict=True), 1) if x != y}

    def visit(plan_a, plan_b, prefix):
        if plan_a.admitted and plan_b.admitted and not (plan_a.read.positions & differing):
            assert plan_a.items == plan_b.items
            assert plan_a.scores == plan_b.scores
            assert plan_a.distribution == plan_b.distribution

    tx.enumerate_joint(case, visit=visit)
