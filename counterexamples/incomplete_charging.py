"""C2, complete attribute charging (Appendix B.5, "Complete attribute charging (C2)").

Overlapping groups I_a = {i*} and I_b = {i*, 2}; the read set {i*} touches both, so
Gamma*(R) = {a, b}, but the declared charge set is {b}. Vocabulary, EM (Eq. 7), routing,
the cap check and all downstream outputs are the compliant ones; the cap of b is
B_b = N eps_0 so all N repetitions are admitted (L_b = n eps_0 <= B_b by induction) while
L_a stays 0. With u(v_1) = phi, u(v_0) = 1 - phi and Delta = 1 each release of v_1 has
ratio e^{eps_0/2}, so the event O_N that all N repetitions release v_1 has

    Pr[O_N | M] / Pr[O_N | M'] = e^{N eps_0 / 2} > e^{B_a}    for N > 2 B_a / eps_0.

eps_0 comes from the online rule, eps_0 = B_b / K with K = N.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from counterexamples.base import OTHER, Construction, Setting, adjacent_pair, build_interface, online, read_query


def default_repetitions(cap_a: Fraction, epsilon: Fraction) -> int:
    """The least integer N > 2 B_a / eps_0."""
    return int(2 * cap_a / epsilon) + 1


def build(
    cap_a: Fraction = Fraction(2), epsilon: Fraction = Fraction(1, 2), repetitions: int | None = None
) -> Construction:
    n = default_repetitions(cap_a, epsilon) if repetitions is None else repetitions
    setting = Setting(cap_a=cap_a, cap_b=n * epsilon, overlap=True)
    store_a, store_b = adjacent_pair(setting.policy())
    query = read_query(charge=frozenset({OTHER}))
    interface = build_interface("c2-incomplete-charging", setting, (query,), online(n))
    log_ratio = mpmath.mpf(n * epsilon.numerator) / (2 * epsilon.denominator)
    return Construction(
        name="c2-incomplete-charging",
        kind="B.5",
        violates="C2",
        title=f"charge set {{b}} for a read of I_a & I_b, N = {n}, eps_0 = {epsilon}",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=n,
        bound=cap_a,
        event=f"O_N = all {n} releases are v1: ratio e^(N eps_0/2) with L_a = 0 throughout",
        closed_form=lambda: log_ratio,
        toml="examples/counterexamples/c2-incomplete-charging.toml",
    )
