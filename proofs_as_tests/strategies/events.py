"""What the property tests report with Hypothesis `event()` and `target()`.

`pytest --hypothesis-show-statistics proofs_as_tests` prints, per test, the share of
examples carrying each event; `scripts/proof_coverage.py` runs the suite under the `ci`
profile and checks the shares against the acceptance floors. The labels
are constants so the script and the tests cannot drift apart.
"""

from __future__ import annotations

from fractions import Fraction

from hypothesis import event, target

from dpmem_ref import SlotPlan

THEOREM1_FALLBACK = "T >= 3 with a fallback"
THEOREM1_NEAR_CAP = "loss > 0.9 B_a"
COROLLARY1_HARD = "multi-attribute cover and loss > 0"
KAPPA_INFINITE = "kappa = inf"
NEAR_CAP = Fraction(9, 10)


class FallbackWatch:
    """A `visit` callback for the joint enumeration: records whether any slot-level
    operation on any path was refused (a fallback under either store)."""

    def __init__(self) -> None:
        self.fallbacks = 0
        self.selections = 0

    def __call__(self, plan_a: SlotPlan, plan_b: SlotPlan, prefix: object) -> None:
        self.selections += 1
        if not plan_a.admitted or not plan_b.admitted:
            self.fallbacks += 1


def report_theorem1(horizon: int, cap: Fraction, worst: Fraction, watch: FallbackWatch) -> None:
    """Events and targets of one Theorem 1 example: horizon, fallback, loss near B_a.
    `worst` is a certified lower bound of the largest loss over the transcripts."""
    event(f"horizon T={horizon}")
    if horizon >= 3 and watch.fallbacks:
        event(THEOREM1_FALLBACK)
    if worst > NEAR_CAP * cap:
        event(THEOREM1_NEAR_CAP)
    target(float(worst / cap), label="worst loss / B_a")
    target(float(watch.fallbacks), label="fallbacks reached")


def report_corollary1(cover_size: int | None, kappa: Fraction | None, worst: Fraction) -> None:
    """Events and targets of one Corollary 1 example: cover size, loss > 0."""
    if cover_size is None or kappa is None:
        event(KAPPA_INFINITE)
        return
    event(f"cover of {cover_size} attribute(s)")
    if cover_size >= 2 and worst > 0:
        event(COROLLARY1_HARD)
    if kappa > 0:
        target(float(worst / kappa), label="worst loss / kappa")
