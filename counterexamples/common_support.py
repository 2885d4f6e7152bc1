"""C1, common view support (Appendix B.5, "Common view support (C1)").

Only the vocabulary depends on the store: under M the slot offers an extra view v_* (a
view tailored to the evidence), under M' it does not. Read set, charge set, eps, the cap
and every downstream channel are the compliant ones. The EM gives v_* probability
gamma > 0 under M and it cannot be released under M', so for O = {v_{t,g} = v_*}

    Pr[O | M] = gamma > 0,    Pr[O | M'] = 0,

and no finite B_a satisfies gamma <= e^{B_a} * 0.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from counterexamples.base import (
    EVIDENCE,
    Construction,
    Setting,
    adjacent_pair,
    build_interface,
    online,
    read_query,
    spread_vocabulary,
)
from dpmem_ref.core.policy import Store
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.parts.broken import PrivateHooks

EXTRA_VIEW = "v_star"


def store_dependent_vocabulary(slot: str, store: Store) -> Vocabulary:
    """V_g(M): the common views, plus v_* whenever the store holds evidence (breaks C1)."""
    base = spread_vocabulary(slot=slot)
    if any(EVIDENCE in item.tags for item in store.items):
        extra = View(name=EXTRA_VIEW, text="tailored to the stored evidence", compatible=frozenset({EVIDENCE}))
        return Vocabulary(slot=slot, views=base.views + (extra,), generic=base.generic)
    return base


def build(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    setting = Setting(cap_a=cap)
    store_a, store_b = adjacent_pair(setting.policy())
    query = read_query()
    interface = build_interface(
        "c1-common-support",
        setting,
        (query,),
        online(K),
        hooks=PrivateHooks(vocabulary=store_dependent_vocabulary),
    )
    epsilon = cap / K

    def gamma() -> mpmath.mpf:
        # Under M: v0 scores 0, v1 and v_* score 1; x_v = eps * u_v / 2.
        half = mpmath.mpf(epsilon.numerator) / (2 * epsilon.denominator)
        return mpmath.exp(half) / (1 + 2 * mpmath.exp(half))

    return Construction(
        name="c1-common-support",
        kind="B.5",
        violates="C1",
        title="store-dependent vocabulary",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event=f"O = {{v_1,s = {EXTRA_VIEW}}}: Pr[O|M] = gamma = e^(eps/2)/(1 + 2e^(eps/2)), Pr[O|M'] = 0",
        closed_form=lambda: mpmath.inf,
        event_closed_form=lambda: (gamma(), mpmath.mpf(0)),
        notes="not expressible in TOML: a file has one vocabulary per slot by construction",
    )
