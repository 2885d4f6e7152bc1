"""Budget periods: the caps B_a renewed per public period, and the guarantee k periods compose to.

A deployment that renews each application's budget every period (say B_a per 30 days) runs
one interaction of Algorithm 1 per period, each with fresh ledgers, over the same memory.
Theorem 1 bounds each period's transcript by B_a (kappa(M, M') for a pair that differs in
several groups, Corollary 1). The periods read the same memory, so their privacy losses add
(basic composition of pure DP): after k periods the whole history is (k x B_a)-DP for a and
(k x kappa)-DP for a pair; nothing bounds it over an unbounded lifetime.

The caveat, spelled out (printed with every composed guarantee, `CAVEAT`): the per-period
cap is not a lifetime cap. The composed bound grows linearly in the number of periods, so a
guarantee is only as meaningful as the k it is stated for; the period boundaries must be
public (calendar time, never a function of memory or of the ledgers); and views released in
an earlier period and re-served later (docs/reuse.md) are post-processing and add nothing.
"""

from __future__ import annotations

import re
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.rational import fraction_text
from dpmem_ref.core.validate import check_int

UNITS = ("hours", "days", "weeks")
MAX_PERIODS = 1_000_000
_PERIOD = re.compile(r"^\s*([1-9][0-9]{0,5})\s+(hour|hours|day|days|week|weeks)\s*$")

CAVEAT = (
    "basic composition of pure DP over periods that read the same memory: the per-period cap "
    "is not a lifetime cap, the bound grows by B_a (kappa) with every period, and period "
    "boundaries must be public (calendar time)"
)


@attrs.frozen
class BudgetPeriod:
    """A public renewal period of the caps: `length` `unit` (e.g. 30 days)."""

    length: int
    unit: str

    def __attrs_post_init__(self) -> None:
        check_int(self.length, "budget.period", 1, 999_999, expected="a length in 1..999999")
        if self.unit not in UNITS:
            raise InputError("budget.period", f"a unit among {list(UNITS)}", self.unit)

    @classmethod
    def parse(cls, value: object, field: str = "budget.period") -> BudgetPeriod:
        """'30 days', '1 week', '12 hours' (singular or plural unit)."""
        match = _PERIOD.match(value) if isinstance(value, str) else None
        if match is None:
            raise InputError(field, 'a period such as "30 days" (hours, days or weeks)', value)
        unit = match.group(2)
        return cls(int(match.group(1)), unit if unit.endswith("s") else unit + "s")

    @property
    def label(self) -> str:
        unit = self.unit[:-1] if self.length == 1 else self.unit
        return f"{self.length} {unit}"


def require_periods(value: object, field: str = "--periods") -> int:
    return check_int(value, field, 1, MAX_PERIODS, expected=f"a number of periods in 1..{MAX_PERIODS}")


@attrs.frozen
class ComposedGuarantee:
    """k periods of a per-period bound: the composed bound k x bound, with the caveat."""

    periods: int
    period: BudgetPeriod | None
    per_period: Fraction
    composed: Fraction = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        require_periods(self.periods)
        object.__setattr__(self, "composed", self.periods * self.per_period)

    def line(self, name: str = "B") -> str:
        """One line: '3 periods of 30 days: 3 x B = 3 x 2 = 6 (caveat ...)'."""
        length = (
            f" of {self.period.label}" if self.period is not None else " (no period declared: separate interactions)"
        )
        plural = "period" if self.periods == 1 else "periods"
        return (
            f"{self.periods} {plural}{length}: {self.periods} x {name} = {self.periods} x "
            f"{fraction_text(self.per_period)} = {fraction_text(self.composed)} ({CAVEAT})"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "periods": self.periods,
            "period": None if self.period is None else self.period.label,
            "per_period_bound": fraction_text(self.per_period),
            "composed_bound": fraction_text(self.composed),
            "composition": "basic (pure DP, k x bound)",
            "caveat": CAVEAT,
        }


def composed_caps(caps: dict[str, Fraction], periods: int) -> dict[str, Fraction]:
    """k x B_a per attribute."""
    require_periods(periods)
    return {name: periods * cap for name, cap in caps.items()}
