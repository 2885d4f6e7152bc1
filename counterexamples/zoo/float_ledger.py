"""Zoo: a ledger kept in floats.

`FloatLedgerCap` keeps each ledger as the binary64 sum of the float charges it admitted and
checks fl(L_a) + fl(eps) <= fl(B_a). (It reconstructs that float sum from the kernel's exact
ledger, which in these witnesses is n times one eps; a kernel "ledger arithmetic" extension
point would make this direct.) Two witnesses, each beside the exact prospective check:

- admits: eps comes from a float configuration, eps = Fraction(0.1) (the binary64 value
  nearest 1/10, slightly above it), B_a = 1. The exact check refuses the tenth charge
  (10 eps = 1 + 5.55e-17 > 1); the float ledger (0.9999999999999999 + 0.1 = 1.0 <= 1.0)
  admits it and the exact ledger ends above the cap. C5's invariant L_a <= B_a fails; the
  realised loss 10 eps / 2 stays below B_a (the EM's loss is below its charge), so this
  breaks the certificate, not the bound.
- refuses: B_a = 3/10, K = 3, eps = 1/10 exactly. The third charge is admissible
  (3/10 <= 3/10) but 0.1 + 0.1 + 0.1 = 0.30000000000000004 > 0.3, so the float ledger
  falls back: a privacy-safe divergence from Algorithm 1 (line 9) that costs utility.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import attrs
import mpmath

from counterexamples.base import Construction, Setting, online
from counterexamples.zoo._common import admissions, one_slot
from dpmem_ref.core.errors import InputError
from dpmem_ref.parts.budget import OnlineBudget
from dpmem_ref.parts.caps import ProspectiveCap


def float_ledger(exact: Fraction, epsilon: Fraction) -> float:
    """The binary64 ledger after n = exact / epsilon float charges of fl(epsilon)."""
    count = exact / epsilon
    if count.denominator != 1:
        raise InputError("ledger", "a whole number of equal charges", exact)
    total = 0.0
    for _ in range(count.numerator):
        total += float(epsilon)
    return total


@attrs.frozen
class FloatLedgerCap:
    """Admit iff fl(L_a) + fl(eps) <= fl(B_a) for every charged a, with fl(L_a) the float sum."""

    name: str = "float-ledger"
    violates: str | None = "C5"
    prospective: bool = False

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool:
        return all(float_ledger(ledgers[a], epsilon) + float(epsilon) <= float(caps[a]) for a in charge_set)


@attrs.frozen
class FloatConfiguredBudget:
    """eps = the binary64 value of min B_a / K, read back exactly (a float config value)."""

    K: int
    name: str = "online-from-float"

    def epsilon(self, charge_set: frozenset[str], caps: Mapping[str, Fraction]) -> Fraction:
        return Fraction(float(OnlineBudget(K=self.K).epsilon(charge_set, caps)))


def build_admits(cap: Fraction = Fraction(1), K: int = 10) -> Construction:
    interface, store_a, store_b = one_slot(
        "zoo-float-ledger-admits", Setting(cap_a=cap), FloatConfiguredBudget(K), cap_rule=FloatLedgerCap()
    )
    exact_twin = attrs.evolve(interface, cap_rule=ProspectiveCap())
    epsilon = Fraction(float(cap / K))
    horizon = K

    def extra() -> dict[str, object]:
        float_decisions = admissions(interface, store_a, horizon)
        exact_decisions = admissions(exact_twin, store_a, horizon)
        ledger = epsilon * sum(float_decisions)
        return {
            "admissions_float_ledger": list(float_decisions),
            "admissions_exact_ledger": list(exact_decisions),
            "exact_ledger_after": mpmath.nstr(mpmath.mpf(ledger.numerator) / ledger.denominator, 25),
            "ledger_exceeds_cap": ledger > cap,
        }

    return Construction(
        name="zoo-float-ledger-admits",
        kind="zoo",
        violates="C5",
        title=f"float ledger admits charge {K} of eps = fl(1/{K}) that the exact ledger refuses",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=horizon,
        bound=cap,
        event=f"all {K} charges admitted: exact L_a = 10 fl(0.1) > B_a = {cap}",
        closed_form=lambda: horizon * mpmath.mpf(epsilon.numerator) / (2 * epsilon.denominator),
        extra=extra,
    )


def build_refuses(cap: Fraction = Fraction(3, 10), K: int = 3) -> Construction:
    interface, store_a, store_b = one_slot(
        "zoo-float-ledger-refuses", Setting(cap_a=cap), online(K), cap_rule=FloatLedgerCap()
    )
    exact_twin = attrs.evolve(interface, cap_rule=ProspectiveCap())
    epsilon = cap / K

    def extra() -> dict[str, object]:
        return {
            "admissions_float_ledger": list(admissions(interface, store_a, K)),
            "admissions_exact_ledger": list(admissions(exact_twin, store_a, K)),
        }

    return Construction(
        name="zoo-float-ledger-refuses",
        kind="zoo",
        violates="C5",
        title=f"float ledger refuses charge {K} of eps = {epsilon} (0.1+0.1+0.1 > 0.3)",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=K,
        bound=cap,
        event="the third turn falls back under both stores: loss 2 eps/2, privacy-safe",
        closed_form=lambda: (K - 1) * mpmath.mpf(epsilon.numerator) / (2 * epsilon.denominator),
        extra=extra,
    )
