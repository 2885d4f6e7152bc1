"""C5, the pathwise cumulative cap (Appendix B.5, "Pathwise cumulative cap (C5)").

Common vocabulary, complete charging (Gamma = {a}) and the EM all kept; the prospective
check and fallback are removed (the kernel's `NoCap`). The same two-view scores with
eps_0 = B_a / K, repeated N times: every release is correctly charged, L_a grows to
N eps_0 > B_a, and the event O_N that every release is v_1 has

    Pr[O_N | M] / Pr[O_N | M'] = e^{N eps_0 / 2} > e^{B_a}    for N > 2 B_a / eps_0.

Tightness twin: N = 2 B_a / eps_0 gives exactly e^{B_a} (reached, not broken).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from counterexamples.base import Construction, Setting, adjacent_pair, build_interface, online, read_query
from counterexamples.incomplete_charging import default_repetitions
from dpmem_ref.parts.broken import NoCap


def build(cap: Fraction = Fraction(2), K: int = 4, repetitions: int | None = None) -> Construction:
    epsilon = cap / K
    n = default_repetitions(cap, epsilon) if repetitions is None else repetitions
    setting = Setting(cap_a=cap)
    store_a, store_b = adjacent_pair(setting.policy())
    interface = build_interface("c5-no-cap", setting, (read_query(),), online(K), cap_rule=NoCap())
    log_ratio = mpmath.mpf(n * epsilon.numerator) / (2 * epsilon.denominator)
    return Construction(
        name="c5-no-cap" if repetitions is None else f"c5-no-cap-n{n}",
        kind="B.5",
        violates="C5",
        title=f"no prospective check, N = {n} charged releases, eps_0 = {epsilon}",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=n,
        bound=cap,
        event=f"O_N = all {n} releases are v1: ratio e^(N eps_0/2), L_a = {n * epsilon}",
        closed_form=lambda: log_ratio,
        toml="examples/counterexamples/c5-no-cap.toml" if repetitions is None else None,
    )
