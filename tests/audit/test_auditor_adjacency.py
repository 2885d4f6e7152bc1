"""How two stores relate (Eq. 8, Corollary 1): which cover attains kappa, every other
cover listed cheapest first, and the adjacency line an auditor reads, over a policy whose
declaration order, name order and cap order all differ."""

from __future__ import annotations

import tomllib
from fractions import Fraction
from pathlib import Path

from dpmem_ref.audit.adjacency import Adjacency, decide_adjacency
from dpmem_ref.config.load import InterfaceFile, interface_from_dict

FIGURE2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"


def _interface() -> InterfaceFile:
    """Figure 2's slots and queries with four groups, declared most expensive first:
    wide and broad hold positions 1-4, left 1-3, right 4; position 5 and 6 lie in none."""
    data = tomllib.loads(FIGURE2.read_text())
    data["attributes"] = {
        "wide": {"group": [1, 2, 3, 4], "cap": 9},
        "broad": {"group": [1, 2, 3, 4], "cap": 7},
        "left": {"group": [1, 2, 3], "cap": 1},
        "right": {"group": [4], "cap": "1/2"},
    }
    base: dict[str, object] = {str(p): {"tags": []} for p in range(1, 7)}
    tagged = {"tags": ["blood-sugar"]}
    data["stores"] = {
        "A": base,
        "in_left": {**base, "3": tagged},
        "in_left_and_right": {**base, "3": tagged, "4": tagged},
        "outside_one": {**base, "6": tagged},
        "outside_two": {**base, "3": tagged, "5": tagged, "6": tagged},
    }
    return interface_from_dict(data)


def test_the_cheapest_single_group_attains_kappa_and_the_others_are_named() -> None:
    """left (cap 1, declared third) attains kappa, not the first declared (wide) nor the
    first by name (broad); the other groups holding D follow, cheapest first."""
    adjacency = decide_adjacency(_interface(), "A", "in_left")
    assert adjacency == Adjacency(
        kind="attribute",
        differing=(3,),
        attribute="left",
        cover=None,
        bound=Fraction(1),
        also_adjacent=("wide", "broad"),
        covers=((("left",), Fraction(1)), (("broad",), Fraction(7)), (("wide",), Fraction(9))),
    )
    assert adjacency.describe("A", "in_left") == (
        "A ~_left in_left: D lies in I_left, bound B_left (also adjacent for wide, broad)"
    )


def test_a_cheaper_multi_group_cover_beats_every_single_group() -> None:
    """D = {3, 4} lies in wide and broad, but {left, right} costs 3/2: kappa is that cover's,
    and the single groups are still listed (as covers and in the adjacency line)."""
    adjacency = decide_adjacency(_interface(), "A", "in_left_and_right")
    assert adjacency == Adjacency(
        kind="cover",
        differing=(3, 4),
        attribute=None,
        cover=("left", "right"),
        bound=Fraction(3, 2),
        also_adjacent=("wide", "broad"),
        covers=((("left", "right"), Fraction(3, 2)), (("broad",), Fraction(7)), (("wide",), Fraction(9))),
    )
    assert adjacency.describe("A", "in_left_and_right") == (
        "A and in_left_and_right: cheapest cover {left, right}, bound kappa = B_left + B_right"
        " (Eq. 8, Corollary 1); D also lies in I_wide, I_broad, whose larger cap is not the tightest promise"
    )


def test_a_cover_with_no_single_group_says_nothing_more() -> None:
    adjacency = Adjacency("cover", (3, 4), None, ("left", "right"), Fraction(3, 2))
    assert adjacency.describe("A", "B") == (
        "A and B: cheapest cover {left, right}, bound kappa = B_left + B_right (Eq. 8, Corollary 1)"
    )


def test_positions_outside_every_group_are_named_singular_and_plural() -> None:
    loaded = _interface()
    one = decide_adjacency(loaded, "A", "outside_one")
    assert (one.kind, one.bound, one.uncovered) == ("not coverable", None, (6,))
    assert one.describe("A", "outside_one") == (
        "A and outside_one differ outside every protected group (position 6): not coverable, kappa = inf"
        " (Eq. 8), no DP guarantee applies to this pair"
    )
    two = decide_adjacency(loaded, "A", "outside_two")
    assert (two.kind, two.differing, two.uncovered) == ("not coverable", (3, 5, 6), (5, 6))
    assert two.describe("A", "outside_two") == (
        "A and outside_two differ outside every protected group (positions 5, 6): not coverable, kappa = inf"
        " (Eq. 8), no DP guarantee applies to this pair"
    )
