"""C4/C6, raw-memory-dependent observable releases (Appendix B.5, "Raw-memory-dependent
observable releases (C3-C4/C6)").

Each construction keeps the common vocabulary, complete charging, the EM and the cap, and
adds one observable output that reads raw memory (directly, or through a score or a
memory-dependent ledger). Each yields a one-sided event: probability 1 under one store of
the adjacent pair and 0 under the other.

- evidence control (C6): c = 1{M_{I_a} contains evidence for a} (kernel `RawEvidenceControl`);
- released score (C3/C6): c = the top internal score (kernel `TopScoreControl`);
- slot activation (C4): the slot is activated only when the store holds evidence
  (kernel `PrivateHooks.routing`);
- fallback decision (C4): the selection falls back unless the evidence view's score clears
  a confidence threshold (kernel `PrivateHooks.fallback`); the fallback status is public;
- ledger-status signal (C4): the same score-gated fallback, and a control that releases
  only the remaining budget of a. Releasing the ledger is allowed by C6 (it is a function
  of the ledger state induced by the history) - the leak is that the score-gated fallback
  made the ledger itself memory-dependent.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

import attrs
import mpmath

from counterexamples.base import (
    EVIDENCE,
    SLOT,
    TARGET,
    Construction,
    Setting,
    adjacent_pair,
    build_interface,
    online,
    read_query,
    spread_vocabulary,
)
from counterexamples.engine import event_probability
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query, TurnRecord
from dpmem_ref.parts.broken import PrivateHooks, RawEvidenceControl, TopScoreControl
from dpmem_ref.parts.protocols import ControlContext, PrivateTurnData

CONFIDENCE_THRESHOLD = Fraction(1, 2)


def evidence_activation(query: Query, history: tuple[TurnRecord, ...], store: Store) -> tuple[str, ...]:
    """Memory-dependent routing: activate the slot only if the store holds evidence."""
    return (SLOT,) if any(EVIDENCE in item.tags for item in store.items) else ()


def low_confidence_fallback(scores: Sequence[Fraction]) -> bool:
    """Fall back unless the evidence view v1 (index 1) scores at least the threshold."""
    return scores[1] < CONFIDENCE_THRESHOLD


@attrs.frozen
class LedgerStatusControl:
    """c_t = the remaining budget B_a - L_a of every attribute after the turn.

    A function of the ledger state, which C6 allows; not tagged as a violation.
    """

    name: str = "ledger-status"
    violates: str | None = None
    reads_private: bool = False
    reads_views: bool = False
    reads_history: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        caps = dict(context.caps)
        return tuple((attribute, caps[attribute] - value) for attribute, value in context.ledgers)


def _one_sided(
    construction_name: str,
    violates: str,
    title: str,
    event: str,
    make: Callable[[Setting], dict[str, Any]],
    predicate: Callable[[tuple[TurnRecord, ...]], bool],
    expected: tuple[int, int],
    cap: Fraction,
    K: int,
    toml: str | None = None,
) -> Construction:
    setting = Setting(cap_a=cap)
    store_a, store_b = adjacent_pair(setting.policy())
    query = read_query()
    interface = build_interface(construction_name, setting, (query,), online(K), **make(setting))

    def probabilities() -> tuple[mpmath.mpf, mpmath.mpf]:
        return (
            event_probability(interface, store_a, 1, predicate, query),
            event_probability(interface, store_b, 1, predicate, query),
        )

    return Construction(
        name=construction_name,
        kind="B.5",
        violates=violates,
        title=title,
        interface=interface,
        store_a=store_a,
        store_b=store_b,
        horizon=1,
        bound=cap,
        event=event,
        closed_form=lambda: mpmath.inf,
        event_closed_form=lambda: (mpmath.mpf(expected[0]), mpmath.mpf(expected[1])),
        event_probabilities=probabilities,
        toml=toml,
    )


def build_evidence_control(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    return _one_sided(
        "c6-evidence-control",
        "C6",
        "control c = 1{M_I_a has evidence for a}",
        "O = {c_1 = 1}: Pr[O|M] = 1, Pr[O|M'] = 0",
        lambda setting: {"control": RawEvidenceControl()},
        lambda transcript: transcript[0].control == 1,
        (1, 0),
        cap,
        K,
        toml="examples/counterexamples/c6-evidence-control.toml",
    )


def build_released_score(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    return _one_sided(
        "c6-released-score",
        "C6",
        "control c = the top internal score",
        "O = {c_1 = (1,)}: Pr[O|M] = 1, Pr[O|M'] = 0",
        lambda setting: {"control": TopScoreControl(), "vocabulary": spread_vocabulary(neutral_compatible=False)},
        lambda transcript: transcript[0].control == (Fraction(1),),
        (1, 0),
        cap,
        K,
        toml="examples/counterexamples/c6-released-score.toml",
    )


def build_slot_activation(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    return _one_sided(
        "c4-slot-activation",
        "C4",
        "slot activated only when memory holds evidence",
        "O = {slot s active at turn 1}: Pr[O|M] = 1, Pr[O|M'] = 0",
        lambda setting: {"hooks": PrivateHooks(routing=evidence_activation)},
        lambda transcript: bool(transcript[0].views),
        (1, 0),
        cap,
        K,
    )


def build_fallback_decision(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    return _one_sided(
        "c4-fallback-decision",
        "C4",
        f"fallback unless u(v1) >= {CONFIDENCE_THRESHOLD}",
        "O = {c_1 = fallback}: Pr[O|M] = 0, Pr[O|M'] = 1",
        lambda setting: {"hooks": PrivateHooks(fallback=low_confidence_fallback)},
        lambda transcript: transcript[0].admitted == (False,),
        (0, 1),
        cap,
        K,
    )


def build_ledger_status(cap: Fraction = Fraction(2), K: int = 3) -> Construction:
    epsilon = cap / K
    return _one_sided(
        "c4-ledger-status",
        "C4",
        "remaining-budget signal over a score-gated ledger",
        f"O = {{c_1 reports B_a - L_a = {cap - epsilon}}}: Pr[O|M] = 1, Pr[O|M'] = 0",
        lambda setting: {"hooks": PrivateHooks(fallback=low_confidence_fallback), "control": LedgerStatusControl()},
        lambda transcript: transcript[0].control == ((TARGET, cap - epsilon),),
        (1, 0),
        cap,
        K,
    )


def build_all() -> tuple[Construction, ...]:
    return (
        build_evidence_control(),
        build_slot_activation(),
        build_fallback_decision(),
        build_ledger_status(),
        build_released_score(),
    )
