"""Zoo: the cap checked as L_a < B_a before the charge, instead of L_a + eps <= B_a.

The check admits any selection while the ledger is below the cap, so the last admitted
charge overshoots by up to one eps. The overshoot needs charges that do not divide B_a:
query `big` reads I_a only (eps = B_a / K = 2/3); query `small` reads I_a and I_b with
B_b = 1 (eps = min(B_a, B_b) / K = 1/3). The strategy big, big, small, big drives L_a to
5/3 < 2, and the fourth charge is admitted: L_a = 7/3. Over the k-view spread (k = 20)
the exact loss is 3 l_k(2/3) + l_k(1/3) > B_a = 2; the engine finds that strategy itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import attrs
import mpmath

from counterexamples.base import (
    INDICATOR_SCORER,
    Construction,
    Setting,
    adjacent_pair,
    build_interface,
    online,
    read_query,
    spread_log_ratio,
    spread_vocabulary,
)


@attrs.frozen
class StrictlyBelowCap:
    """Admit iff L_a < B_a for every charged a (the charge itself is not looked at)."""

    name: str = "below-cap-before-charge"
    violates: str | None = "C5"
    prospective: bool = False

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool:
        return all(ledgers[a] < caps[a] for a in charge_set)


def build(cap: Fraction = Fraction(2), K: int = 3, k: int = 20, horizon: int = 4) -> Construction:
    setting = Setting(cap_a=cap, cap_b=Fraction(1))
    big = read_query("big", frozenset({1}))
    small = read_query("small", frozenset({1, 2}))
    interface = build_interface(
        "zoo-strict-less-cap",
        setting,
        (big, small),
        online(K),
        spread_vocabulary(k),
        INDICATOR_SCORER,
        cap_rule=StrictlyBelowCap(),
    )
    store_a, store_b = adjacent_pair(interface.policy)
    eps_big, eps_small = cap / K, Fraction(1) / K
    return Construction(
        name="zoo-strict-less-cap",
        kind="zoo",
        violates="C5",
        title=f"admit while L_a < B_a; charges {eps_big} and {eps_small}, {k + 1} views",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=horizon,
        bound=cap,
        event="big, big, small, big all release v1: L_a = 7/3 > B_a",
        closed_form=lambda: 3 * spread_log_ratio(eps_big, k) + spread_log_ratio(eps_small, k),
        extra=lambda: {"overshoot_ledger": "7/3"},
    )


def reference_closed_form() -> mpmath.mpf:
    return 3 * spread_log_ratio(Fraction(2, 3), 20) + spread_log_ratio(Fraction(1, 3), 20)
