"""The agent file's budget scopes, read exactly (docs/agent.md, "Budget scopes"):

- `[scopes] user_caps`: one positive cap U_a for every attribute of the policy, no other;
- `[scopes.shares]`: each application's share B^app_a, positive, at most the interface's
  cap B_a, for every attribute and no other, summing over applications to at most U_a.

Each refusal is one line naming the field, what was expected and what was found."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.runtime.settings import check_shares, check_user_caps

ATTRIBUTES = ("diabetes", "debt")
CAPS = {"diabetes": Fraction(2), "debt": Fraction(2)}  # the interface's B_a
USER_CAPS = {"diabetes": Fraction(3), "debt": Fraction(3)}  # U_a


def test_user_caps_are_exact_positive_caps_in_policy_order() -> None:
    caps = check_user_caps({"debt": "5/2", "diabetes": 3}, ATTRIBUTES)
    assert caps == {"diabetes": Fraction(3), "debt": Fraction(5, 2)}
    assert list(caps) == list(ATTRIBUTES)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (3, "scopes.user_caps: expected a table, found 3"),
        (
            {"diabetes": 3, "debt": 3, "sleep": 1},
            """scopes.user_caps: expected a cap for each of ['diabetes', 'debt'], found "unknown ['sleep'], missing []\"""",
        ),
        (
            {"diabetes": 3},
            """scopes.user_caps: expected a cap for each of ['diabetes', 'debt'], found "unknown [], missing ['debt']\"""",
        ),
        (
            {"diabetes": 3, "sleep": 1},
            """scopes.user_caps: expected a cap for each of ['diabetes', 'debt'], found "unknown ['sleep'], missing ['debt']\"""",
        ),
        ({"diabetes": 3, "debt": 0}, "scopes.user_caps.debt: expected a positive number, found 0"),
    ],
    ids=["not a table", "unknown attribute", "missing attribute", "both", "zero cap"],
)
def test_bad_user_caps_are_refused_in_one_line(value: object, message: str) -> None:
    with pytest.raises(InputError) as refused:
        check_user_caps(value, ATTRIBUTES)
    assert str(refused.value) == message


def test_shares_are_exact_and_may_reach_every_bound() -> None:
    """A share may equal B_a, and the shares of one attribute may sum to U_a exactly."""
    shares = {"recipes": {"debt": "1/2", "diabetes": 2}, "finance": {"diabetes": 1, "debt": 2}}
    assert check_shares(shares, USER_CAPS, CAPS) == {
        "recipes": {"diabetes": Fraction(2), "debt": Fraction(1, 2)},
        "finance": {"diabetes": Fraction(1), "debt": Fraction(2)},
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            None,
            "scopes.shares: expected a share of the per-user caps for each application (with user_caps), found 'none'",
        ),
        ([1], "scopes.shares: expected a table, found 'list'"),
        ({}, "scopes.shares: expected at least one application's share, found 'an empty table'"),
        (
            {"bad app": {"diabetes": 1, "debt": 1}},
            "scopes.shares: expected 1..128 characters of [A-Za-z0-9._-], starting with a letter or digit,"
            " found 'bad app' (a space at character 4)",
        ),
        (
            {"recipes": {"diabetes": 1, "debt": 1, "sleep": 1}},
            """scopes.shares.recipes: expected a share for each of ['diabetes', 'debt'], found "unknown ['sleep'], missing []\"""",
        ),
        (
            {"recipes": {"diabetes": 1}},
            """scopes.shares.recipes: expected a share for each of ['diabetes', 'debt'], found "unknown [], missing ['debt']\"""",
        ),
        ({"recipes": {"diabetes": 1, "debt": 0}}, "scopes.shares.recipes.debt: expected a positive number, found 0"),
        (
            {"recipes": {"diabetes": 3, "debt": 1}},
            """scopes.shares.recipes: expected shares at most the interface's caps B_a, found "above B_a for ['diabetes']\"""",
        ),
        (
            {"recipes": {"diabetes": 2, "debt": 1}, "finance": {"diabetes": 2, "debt": 1}},
            "scopes.shares: expected shares summing to at most the per-user cap U_a (diabetes: 3), found 'diabetes: 4'",
        ),
    ],
    ids=[
        "none",
        "not a table",
        "empty",
        "bad app id",
        "unknown attribute",
        "missing attribute",
        "zero",
        "above B_a",
        "above U_a",
    ],
)
def test_bad_shares_are_refused_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(InputError) as refused:
        check_shares(value, USER_CAPS, CAPS)
    assert str(refused.value) == message
