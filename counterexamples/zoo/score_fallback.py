"""Zoo: fallback decided from scores ("skip the selection when the generic view wins").

A budget-saving shortcut: if the generic view already has the top internal score, return it
without a selection and without a charge. Under M' (no evidence) the generic view v_0
scores 1 and the slot falls back; under M the evidence view wins and the EM runs. The
public fallback status (and the ledger) now depend on memory:
Pr[c = fallback | M] = 0, Pr[c = fallback | M'] = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import mpmath

from counterexamples.base import Construction, Setting, online
from counterexamples.engine import event_probability
from counterexamples.zoo._common import one_slot
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.parts.broken import PrivateHooks


def generic_wins(scores: Sequence[Fraction]) -> bool:
    """Fall back when the generic view (index 0) has a top score."""
    return scores[0] >= max(scores)


def build(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    interface, store_a, store_b = one_slot(
        "zoo-score-fallback", Setting(cap_a=cap), online(K), hooks=PrivateHooks(fallback=generic_wins)
    )
    query = interface.queries[0]

    def probabilities() -> tuple[mpmath.mpf, mpmath.mpf]:
        def fell_back(transcript: tuple[TurnRecord, ...]) -> bool:
            return transcript[0].admitted == (False,)

        return (
            event_probability(interface, store_a, 1, fell_back, query),
            event_probability(interface, store_b, 1, fell_back, query),
        )

    return Construction(
        name="zoo-score-fallback",
        kind="zoo",
        violates="C4",
        title="skip selection and charge when the generic view scores highest",
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event="O = {c_1 = fallback}: Pr[O|M] = 0, Pr[O|M'] = 1",
        closed_form=lambda: mpmath.inf,
        event_closed_form=lambda: (mpmath.mpf(0), mpmath.mpf(1)),
        event_probabilities=probabilities,
    )
