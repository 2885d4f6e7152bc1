"""Zoo: the EM exponent eps u / Delta instead of eps u / (2 Delta) (Eq. 7 without the 2).

A selector part implementing the common transcription slip: weights exp(eps u / Delta).
Its effect equals halving Delta: one release charged eps = B_a over the k-view spread has
log ratio l_k(2 eps) > B_a for k >= 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import attrs

from counterexamples.base import Construction, Setting, online, spread_log_ratio, spread_vocabulary
from counterexamples.zoo._common import one_slot
from dpmem_ref.mechanism.em import ExponentialWeights


@attrs.frozen
class MissingFactorTwoSelector:
    """Pr[v] proportional to exp(eps u_v / Delta): breaks C3 (not Eq. 7)."""

    name: str = "em-without-factor-two"
    violates: str | None = "C3"

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ExponentialWeights:
        return ExponentialWeights(views=views, exponents=tuple(epsilon * u / sensitivity for u in scores))


def build(cap: Fraction = Fraction(2), k: int = 3) -> Construction:
    interface, store_a, store_b = one_slot(
        "zoo-eps-over-delta",
        Setting(cap_a=cap),
        online(1),
        vocabulary=spread_vocabulary(k),
        selector=MissingFactorTwoSelector(),
    )
    return Construction(
        name="zoo-eps-over-delta",
        kind="zoo",
        violates="C3",
        title=f"EM weights exp(eps u / Delta); eps = B_a, {k + 1} views",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event="O = {v_1,s = v1}: ratio e^(l_k(2 eps)) > e^(B_a)",
        closed_form=lambda: spread_log_ratio(2 * cap, k),
    )
