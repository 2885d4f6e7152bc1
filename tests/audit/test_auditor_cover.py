"""kappa (Eq. 8) by branch and bound: cross-checked against exhaustive search for
A <= 12 and against z3, and each rule (dominance, bound) pinned by a case that a broken
variant of it gets wrong. Its speed for A = 1..40 is measured in benchmarks/bench_audit.py
(--kappa), not asserted here."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from dpmem_ref.audit import cover as cover_module
from dpmem_ref.audit.cover import minimum_cover, minimum_cover_exhaustive, minimum_cover_z3, useful_attributes
from dpmem_ref.core.policy import Attribute, Layout, Policy


def policy_of(groups: list[tuple[set[int], Fraction | int]], size: int) -> Policy:
    layout = Layout(tuple("s" for _ in range(size)))
    attributes = tuple(Attribute(f"a{i:02d}", frozenset(g), Fraction(c)) for i, (g, c) in enumerate(groups))
    return Policy(layout, attributes)


def random_case(rng: random.Random, attributes: int, positions: int) -> tuple[Policy, frozenset[int]]:
    equal = rng.random() < 0.3  # equal caps: many ties, the hardest case for the bound
    groups = []
    for _ in range(attributes):
        size = rng.randint(1, max(1, positions // 2))
        cap = Fraction(1) if equal else Fraction(rng.randint(1, 12), rng.randint(1, 4))
        groups.append((set(rng.sample(range(1, positions + 1), size)), cap))
    differing = frozenset(rng.sample(range(1, positions + 1), rng.randint(1, positions)))
    return policy_of(groups, positions), differing


def test_branch_and_bound_equals_exhaustive_search_up_to_12_attributes() -> None:
    rng = random.Random(26)
    coverable = 0
    for _ in range(250):
        policy, differing = random_case(rng, rng.randint(1, 12), rng.randint(1, 14))
        found, expected = minimum_cover(policy, differing), minimum_cover_exhaustive(policy, differing)
        assert (found is None) == (expected is None)
        if found is None or expected is None:
            continue
        coverable += 1
        assert found.cost == expected.cost
        union = frozenset().union(*(policy.attribute(a).group for a in found.attributes))
        assert differing <= union and found.cost == sum(policy.caps[a] for a in found.attributes)
    assert coverable >= 90  # the generator reaches covers, not only kappa = inf


def test_branch_and_bound_equals_z3_at_forty_attributes() -> None:
    pytest.importorskip("z3")
    rng = random.Random(40)
    for _ in range(6):
        groups = [(set(rng.sample(range(1, 31), rng.randint(2, 8))), Fraction(rng.randint(1, 9))) for _ in range(40)]
        policy = policy_of(groups, 30)
        differing = frozenset().union(*(frozenset(g) for g, _ in groups))
        found, solved = minimum_cover(policy, differing), minimum_cover_z3(policy, differing)
        assert found is not None and solved is not None and found.cost == solved.cost


def test_dominance_keeps_a_cheaper_subset_group() -> None:
    """a00 covers {1} for 1, a01 covers {1, 2} for 5, a02 covers {2} for 1: kappa = 2 by
    {a00, a02}. A dominance rule that ignored caps would drop a00 and a02 (their parts lie
    in a01's) and answer 5."""
    policy = policy_of([({1}, 1), ({1, 2}, 5), ({2}, 1)], 2)
    kept = {name for name, _, _ in useful_attributes(policy, frozenset({1, 2}))}
    assert kept == {"a00", "a01", "a02"}
    found = minimum_cover(policy, frozenset({1, 2}))
    assert found is not None and found.cost == 2 and found.attributes == ("a00", "a02")


def test_dominance_drops_exactly_the_dominated() -> None:
    policy = policy_of([({1}, 3), ({1, 2}, 2), ({1, 2}, 2), ({3}, 1)], 3)
    kept = [name for name, _, _ in useful_attributes(policy, frozenset({1, 2, 3}))]
    assert kept == ["a01", "a03"]  # a00 dominated by a01; a02 ties a01 and is later


def test_bound_is_a_lower_bound_on_every_cover() -> None:
    """Step 4's packing bound never exceeds the true minimum (else a branch holding the
    optimum could be cut). A bound that also counted positions whose holder sets overlap
    (two positions one attribute covers) fails here."""
    rng = random.Random(4)
    for _ in range(300):
        policy, differing = random_case(rng, rng.randint(1, 10), rng.randint(1, 12))
        expected = minimum_cover_exhaustive(policy, differing)
        if expected is None:
            continue
        search = cover_module._Search(useful_attributes(policy, differing), sorted(differing))
        assert search.bound((1 << search.count) - 1) <= expected.cost


def test_not_coverable_and_empty() -> None:
    policy = policy_of([({1}, 1)], 3)
    assert minimum_cover(policy, frozenset({1, 2})) is None
    assert minimum_cover(policy, frozenset()) == cover_module.Cover((), Fraction(0))


def test_dominance_drops_a_group_within_an_equally_capped_one() -> None:
    """a00 ({1}, cap 2) lies within a01 ({1, 2}, cap 2): equal caps, strictly smaller part,
    dominated whatever the declaration order."""
    policy = policy_of([({1}, 2), ({1, 2}, 2)], 2)
    assert useful_attributes(policy, frozenset({1, 2})) == [("a01", frozenset({1, 2}), Fraction(2))]


def test_a_group_disjoint_from_the_differences_is_never_useful() -> None:
    """a00 holds no differing position: however cheap, it helps no cover and is not listed."""
    policy = policy_of([({3}, 1), ({1, 2}, 2)], 3)
    assert useful_attributes(policy, frozenset({1, 2})) == [("a01", frozenset({1, 2}), Fraction(2))]


@pytest.mark.parametrize(
    ("groups", "size", "differing", "attributes", "cost"),
    [
        # The greedy cover (least cap per new position: a00 at 2/2, before a01 at 1/1) is
        # already minimal; the equally cheap {a01, a02} does not replace it.
        ([({1, 2, 3}, 2), ({1}, 1), ({2}, 1)], 3, {1, 2}, ("a00",), 2),
        # Greedy takes a01 (1 per position), then a02: cost 3, as a00 alone; a01, a02 stay.
        ([({1, 2}, 3), ({2}, 1), ({1}, 2)], 2, {1, 2}, ("a01", "a02"), 3),
        # Greedy ties a00, a01, a02 at 1 per position and takes the first declared: {a00, a01}
        # costs 2, and the search's a02 (also 2) is not strictly cheaper.
        ([({1}, 1), ({2}, 1), ({1, 2}, 2)], 2, {1, 2}, ("a00", "a01"), 2),
        # Greedy costs 6; the search branches on the position with the fewest holders (5: only
        # a04), then 3 (a02), then 2 (a00 before a01): the first cover of cost 5 it meets.
        (
            [({2, 4}, 1), ({1, 2}, 1), ({3, 4}, 1), ({1}, 3), ({1, 5}, 3), ({2}, 1)],
            5,
            {1, 2, 3, 4, 5},
            ("a00", "a02", "a04"),
            5,
        ),
    ],
)
def test_equally_cheap_covers_resolve_as_the_search_documents(
    groups: list[tuple[set[int], Fraction | int]],
    size: int,
    differing: set[int],
    attributes: tuple[str, ...],
    cost: int,
) -> None:
    """Among covers of equal cost the one named (in `dpmem audit`'s adjacency line) is the
    greedy incumbent, replaced only by a strictly cheaper cover, the first the branching
    order reaches (module docstring, steps 3-4)."""
    found = minimum_cover(policy_of(groups, size), frozenset(differing))
    assert found == cover_module.Cover(attributes, Fraction(cost))


def test_every_method_prices_the_empty_cover_as_an_exact_fraction() -> None:
    pytest.importorskip("z3")
    policy = policy_of([({1}, 1), ({2}, 2)], 3)
    for method in (minimum_cover, minimum_cover_exhaustive, minimum_cover_z3):
        found = method(policy, frozenset())
        assert found is not None and found.attributes == () and type(found.cost) is Fraction
