"""Zoo: sensitivity taken too small (Delta halved).

The scorer declares Delta = 1/2 while its true bound (Eq. 6) is 1: the EM exponents
eps u / (2 Delta) are doubled. One admitted release charged eps = B_a (K = 1) over the
k-view spread has log ratio l_k(2 eps) (counterexamples.base), which exceeds eps = B_a for
k >= 2: with B_a = 2 and k = 3 it is 2 + log((1 + 3e^2)/(e^2 + 3)) = 2.80.

The kernel's static check compares the declared bound with `LinearTagScorer.exact_sensitivity`
(1 > 1/2) and refuses the interface with C3; the auditor measures how far it breaks.
"""

from __future__ import annotations

from fractions import Fraction

from counterexamples.base import (
    Construction,
    Setting,
    online,
    spread_log_ratio,
    spread_vocabulary,
)
from counterexamples.zoo._common import one_slot
from dpmem_ref.parts.scoring import LinearTagScorer, LinearWeights

HALVED_SCORER = LinearTagScorer(
    weights=LinearWeights(relevance=Fraction(0), compatibility=Fraction(1), specificity=Fraction(0)),
    declared_sensitivity=Fraction(1, 2),
)


def build(cap: Fraction = Fraction(2), k: int = 3) -> Construction:
    vocabulary = spread_vocabulary(k)
    interface, store_a, store_b = one_slot(
        "zoo-halved-sensitivity", Setting(cap_a=cap), online(1), vocabulary=vocabulary, scorer=HALVED_SCORER
    )
    return Construction(
        name="zoo-halved-sensitivity",
        kind="zoo",
        violates="C3",
        title=f"declared Delta = 1/2, true Delta = {HALVED_SCORER.exact_sensitivity(vocabulary)}; eps = B_a, {k + 1} views",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event="O = {v_1,s = v1}: ratio e^(l_k(2 eps)) > e^(B_a)",
        closed_form=lambda: spread_log_ratio(2 * cap, k),
    )
