"""Which way a privacy loss is taken, and the best of a search both ways.

Every worst case is computed in both directions: log Pr[w | A] / Pr[w | B] (`A_OVER_B`,
the store passed as `store_a` in the numerator) and its reverse (`B_OVER_A`).
`LossDirection` is the one spelling of a direction in analysis/ and audit/:

- its value is the JSON spelling, "a_over_b" / "b_over_a" (the `direction` key of
  `dpmem audit --json`; a `str`, so it compares and serialises as that string);
- `side` is the short side, "a" / "b": the numerator store, whose controls a witness
  expects and whose ledgers its rows show (`LossDirection.of` reads either spelling);
- `numerator` / `denominator` order any per-store pair (stores, their names, plans,
  cursors, controls); `pick` chooses from a per-direction pair (losses, views, choices).

`Best` is the largest loss in each direction with what attains it: the view for one
release (`StepTable.best`), the witness chain for a search (every programme's `run`).
"""

from __future__ import annotations

import enum
from typing import Generic, NamedTuple, TypeVar

from dpmem_ref.analysis.loss import Loss

T = TypeVar("T")
W = TypeVar("W")


class LossDirection(enum.StrEnum):
    """Which store is the numerator of the likelihood ratio (module docstring)."""

    A_OVER_B = "a_over_b"
    B_OVER_A = "b_over_a"

    @classmethod
    def of(cls, spelling: str) -> LossDirection:
        """The direction of any spelling: a member, its JSON spelling or its short side."""
        if spelling == "a":
            return cls.A_OVER_B
        if spelling == "b":
            return cls.B_OVER_A
        return cls(spelling)

    @property
    def side(self) -> str:
        """The numerator's short side: "a" or "b"."""
        return "a" if self is LossDirection.A_OVER_B else "b"

    @property
    def other(self) -> LossDirection:
        return LossDirection.B_OVER_A if self is LossDirection.A_OVER_B else LossDirection.A_OVER_B

    def pick(self, a_over_b: T, b_over_a: T) -> T:
        """This direction's member of a per-direction pair."""
        return a_over_b if self is LossDirection.A_OVER_B else b_over_a

    def numerator(self, a: T, b: T) -> T:
        """The numerator store's member of a per-store pair (A's, B's)."""
        return a if self is LossDirection.A_OVER_B else b

    def denominator(self, a: T, b: T) -> T:
        """The denominator store's member of a per-store pair (A's, B's)."""
        return b if self is LossDirection.A_OVER_B else a


class Best(NamedTuple, Generic[W]):
    """The largest loss each direction (`ab`: A over B, `ba`: B over A) with what attains
    it (`ab_at`, `ba_at`: a view, or a witness chain). A tuple, so (ab, ab_at, ba, ba_at)
    unpacks as the step tables' results always did."""

    ab: Loss
    ab_at: W
    ba: Loss
    ba_at: W

    def combine(self, other: Best[W]) -> Best[W]:
        """Interval max of both directions; what attains the larger (first on ties)."""
        ab_at = other.ab_at if other.ab.ranks_above(self.ab) else self.ab_at
        ba_at = other.ba_at if other.ba.ranks_above(self.ba) else self.ba_at
        return Best(self.ab.join(other.ab), ab_at, self.ba.join(other.ba), ba_at)

    def loss(self, direction: LossDirection) -> Loss:
        return direction.pick(self.ab, self.ba)

    def at(self, direction: LossDirection) -> W:
        return direction.pick(self.ab_at, self.ba_at)
