"""C3, the exponential mechanism (Appendix B.5, first construction under
"Raw-memory-dependent observable releases"; the CappedArgmax ablation of Table 4).

Common vocabulary {v_0, v_1}, complete charging, the prospective cap and the fallback
all kept; the EM is replaced by deterministic highest-score selection (the kernel's
`ArgmaxSelector`). With the reversed scores of the C2 construction,

    Pr[v_{t,g} = v_1 | M] = 1,    Pr[v_{t,g} = v_1 | M'] = 0,

so no finite B_a holds.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from counterexamples.base import Construction, Setting, adjacent_pair, build_interface, online, read_query
from dpmem_ref.parts.broken import ArgmaxSelector


def build(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    setting = Setting(cap_a=cap)
    store_a, store_b = adjacent_pair(setting.policy())
    interface = build_interface("c3-argmax", setting, (read_query(),), online(K), selector=ArgmaxSelector())
    return Construction(
        name="c3-argmax",
        kind="B.5",
        violates="C3",
        title="deterministic highest-score selection",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event="O = {v_1,s = v1}: Pr[O|M] = 1, Pr[O|M'] = 0",
        closed_form=lambda: mpmath.inf,
        event_closed_form=lambda: (mpmath.mpf(1), mpmath.mpf(0)),
        toml="examples/counterexamples/c3-argmax.toml",
    )
