"""Corollary 1 (composite-store transcript privacy) and kappa (Eq. 8).

For store pairs differing across several groups (and sometimes outside every group):
- kappa from the kernel's cover routine equals an independent brute-force minimum over
  all attribute subsets, and the z3 optimiser agrees; no cover <=> kappa = inf (None);
- when kappa < inf, every augmented transcript omega has exact loss <= the pathwise
  chain bound min over covers C of sum_{a in C} L_a(omega), which is <= kappa, in both
  directions (certified intervals against exact rationals).
"""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

from hypothesis import given, note
from hypothesis import strategies as st

from dpmem_ref import differing_positions, minimum_cover
from dpmem_ref.audit.cover import minimum_cover_exhaustive, minimum_cover_z3
from proofs_as_tests import transcripts as tx
from proofs_as_tests.strategies import cases, policies
from proofs_as_tests.strategies.events import report_corollary1
from proofs_as_tests.strategies.hard import cover_pair_cases


def brute_force_covers(policy, differing):
    """Every cover of D, with its cost (independent of dpmem_ref.audit.cover)."""
    names = [a.name for a in policy.attributes]
    groups = {a.name: set(a.group) for a in policy.attributes}
    caps = {a.name: a.cap for a in policy.attributes}
    found = []
    for size in range(len(names) + 1):
        for subset in combinations(names, size):
            union = set().union(*(groups[a] for a in subset)) if subset else set()
            if set(differing) <= union:
                found.append((subset, sum((caps[a] for a in subset), Fraction(0))))
    return found


def brute_force_kappa(policy, differing):
    covers = brute_force_covers(policy, differing)
    return min(cost for _, cost in covers) if covers else None


@given(policies(max_attributes=5), st.data())
def test_kappa_equals_brute_force(policy, data):
    positions = list(range(1, policy.layout.size + 1))
    differing = frozenset(data.draw(st.sets(st.sampled_from(positions), max_size=len(positions))))
    expected = brute_force_kappa(policy, differing)
    cover = minimum_cover(policy, differing)
    exhaustive = minimum_cover_exhaustive(policy, differing) if differing else cover
    solved = minimum_cover_z3(policy, differing) if differing else cover
    if expected is None:
        assert cover is None and exhaustive is None and solved is None  # kappa = inf
        uncovered = differing - frozenset().union(*(a.group for a in policy.attributes))
        assert uncovered
        return
    for found in (cover, exhaustive, solved):
        assert found is not None and found.cost == expected
        union = frozenset().union(*(policy.attribute(a).group for a in found.attributes))
        assert differing <= union


def corollary1_cases():
    """Mostly pairs built from a chosen multi-attribute cover (kappa finite), one in four
    from the general multi-group pool (often uncoverable: kappa = inf)."""
    return st.integers(0, 3).flatmap(lambda k: cases(multi_group=True) if k == 3 else cover_pair_cases())


@given(corollary1_cases())
def test_composite_loss_at_most_kappa(case):
    note(repr(case))
    policy = case.interface.policy
    differing = differing_positions(case.store_a, case.store_b)
    cover = minimum_cover(policy, differing)
    assert (cover is None) == (brute_force_kappa(policy, differing) is None)
    if cover is None:
        report_corollary1(None, None, Fraction(0))
        return  # kappa = inf: no finite claim
    kappa = cover.cost
    covers = brute_force_covers(policy, differing)
    names = policy.attribute_names
    worst = Fraction(0)
    for leaf in tx.enumerate_joint(case):
        note(f"transcript {leaf.transcript}")
        assert not leaf.truncated, leaf.truncated
        assert leaf.ledgers_a == leaf.ledgers_b
        ledgers = dict(zip(names, leaf.ledgers_a, strict=True))
        chain = min(sum((ledgers[a] for a in subset), Fraction(0)) for subset, _ in covers)
        assert chain <= kappa
        for loss in (leaf.loss_ab, leaf.loss_ba):
            assert tx.certified_le(loss, chain), f"loss {loss} > chained ledgers {chain}"
            if loss is not None and loss is not tx.INF and not tx.is_exact_zero(loss):
                low = tx.lower_fraction(loss)
                worst = max(worst, low if low is not None else Fraction(0))
    report_corollary1(len(cover.attributes), kappa, worst)
