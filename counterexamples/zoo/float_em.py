"""Zoo: a floating-point EM sampler whose support depends on underflow.

The usual "stable" implementation, p_v = exp(x_v - x_max) / sum_w exp(x_w - x_max) in
binary64, rounds exp(-g) to exactly 0.0 once the gap g exceeds about 745.13. A view whose
gap sits just below that threshold under M and just above it under M' has a positive
(subnormal) probability under M and none under M': a one-sided event, although the exact
EM on the same inputs is eps-DP (Mironov 2012 and Ilvento 2020 give related attacks).

Inputs (all valid for Eq. 7): eps = B_a = 2 (K = 1), declared Delta = 1/1000, so the
exponent scale is eps / (2 Delta) = 1000. View `top` scores 1 under both stores (public
relevance); view `far` scores 0.2554 under M and 0.2544 under M' (a change of Delta):
gaps 744.6 and 745.6.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import attrs
import mpmath

from counterexamples.base import EVIDENCE, Construction, Setting, online
from counterexamples.zoo._common import one_slot
from dpmem_ref.core.policy import MemoryItem
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.mechanism.em import iv_precision
from dpmem_ref.mechanism.randomness import RandomSource
from dpmem_ref.parts.scoring import FunctionScorer

FAR_SCORE_WITH_EVIDENCE = Fraction(2554, 10000)
FAR_SCORE_WITHOUT = Fraction(2544, 10000)
SENSITIVITY = Fraction(1, 1000)
UNIT_BITS = 53


@attrs.frozen
class FloatRelease:
    """The release distribution a binary64 EM actually samples from: the exact values of
    its float probabilities. Views rounded to 0.0 are outside the support."""

    views: tuple[str, ...]
    probabilities: tuple[float, ...]

    def log_probability(self, view: str) -> mpmath.mpf:
        p = self.probabilities[self.views.index(view)] if view in self.views else 0.0
        return mpmath.log(mpmath.mpf(p)) if p > 0 else mpmath.mpf("-inf")

    def log_probability_interval(self, view: str) -> mpmath.ctx_iv.ivmpf | None:
        p = self.probabilities[self.views.index(view)] if view in self.views else 0.0
        if p <= 0:
            return None
        with iv_precision(70):
            return mpmath.iv.log(mpmath.iv.mpf(p))  # a float converts to mpmath exactly

    def support(self) -> tuple[str, ...]:
        return tuple(v for v, p in zip(self.views, self.probabilities, strict=True) if p > 0)

    def sample(self, source: RandomSource) -> str:
        u = source.randbelow(2**UNIT_BITS) / 2**UNIT_BITS
        cumulative = 0.0
        for view, p in zip(self.views, self.probabilities, strict=True):
            cumulative += p
            if u < cumulative:
                return view
        return self.support()[-1]


@attrs.frozen
class FloatExponentialMechanism:
    """p_v = exp(x_v - x_max) / sum in binary64, x_v = eps u_v / (2 Delta): breaks C3
    (the released distribution is not Eq. 7 - its support depends on underflow)."""

    name: str = "float-em"
    violates: str | None = "C3"

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> FloatRelease:
        exponents = [float(epsilon) * float(u) / (2 * float(sensitivity)) for u in scores]
        top = max(exponents)
        weights = [math.exp(x - top) for x in exponents]
        total = math.fsum(weights)
        return FloatRelease(views=views, probabilities=tuple(w / total for w in weights))


def near_threshold_scores(
    relevance: Mapping[str, Fraction], vocabulary: Vocabulary, items: tuple[MemoryItem, ...]
) -> tuple[Fraction, ...]:
    evidence = any(EVIDENCE in item.tags for item in items)
    return (Fraction(1), FAR_SCORE_WITH_EVIDENCE if evidence else FAR_SCORE_WITHOUT)


VOCABULARY = Vocabulary(slot="s", views=(View("top", "public default"), View("far", "rare mode")), generic="top")
SCORER = FunctionScorer(near_threshold_scores, SENSITIVITY, name="near-underflow")


def build(cap: Fraction = Fraction(2)) -> Construction:
    interface, store_a, store_b = one_slot(
        "zoo-float-em",
        Setting(cap_a=cap),
        online(1),
        vocabulary=VOCABULARY,
        scorer=SCORER,
        selector=FloatExponentialMechanism(),
    )
    tiny = (
        FloatExponentialMechanism()
        .distribution(VOCABULARY.names, (Fraction(1), FAR_SCORE_WITH_EVIDENCE), cap, SENSITIVITY)
        .probabilities[1]
    )
    return Construction(
        name="zoo-float-em",
        kind="zoo",
        violates="C3",
        title="binary64 EM: exp(-744.6) > 0 under M, exp(-745.6) = 0.0 under M'",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event=f"O = {{v_1,s = far}}: Pr[O|M] = {tiny!r} (a subnormal), Pr[O|M'] = 0.0",
        closed_form=lambda: mpmath.inf,
        event_closed_form=lambda: (mpmath.mpf(tiny), mpmath.mpf(0)),
        extra=exact_em_facts,
    )


def exact_em_facts() -> dict[str, object]:
    """The kernel's exact EM on the same inputs: finite worst-case loss, <= eps."""
    from counterexamples.engine import exact_worst_case

    twin = exact_em_interface()
    worst = exact_worst_case(twin.interface, twin.store_a, twin.store_b, 1).worst_case.worst
    with mpmath.workdps(60):
        return {"exact_em_log_ratio": mpmath.nstr(worst.midpoint, 30)}


def exact_em_interface() -> Construction:
    """The same inputs through the kernel's exact EM: finite loss (at most eps = 2)."""
    interface, store_a, store_b = one_slot(
        "exact-em-near-underflow", Setting(cap_a=Fraction(2)), online(1), vocabulary=VOCABULARY, scorer=SCORER
    )
    return Construction(
        name="exact-em-near-underflow",
        kind="zoo",
        violates="C3",
        title="control: exact EM on the same inputs",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=Fraction(2),
        event="the exact EM keeps both views in the support",
        closed_form=lambda: mpmath.mpf(1),
    )
