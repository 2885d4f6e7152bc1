"""The witness table (`dpmem audit` and `python -m counterexamples`): a turn that releases no
slot, and the control column for controls other than the fallback pairs."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import ClassVar

import attrs

from counterexamples import registry
from counterexamples.report import witness_text
from counterexamples.runner import evaluate
from dpmem_ref.audit.render import audit_text
from dpmem_ref.audit.verdict import audit
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.parts.protocols import ControlContext, PrivateTurnData

ROOT = Path(__file__).resolve().parents[2]
HEADER = (
    "       turn  query                  slot=view                          release                        control"
    "                          step         ledgers after"
)


def test_turn_without_a_released_slot_prints_dashes() -> None:
    """Memory-dependent slot activation (C4): under M' the query activates no slot, so the
    witness turn releases nothing; its slot, release and control (none) columns print "-",
    its step 0, and the note says why the transcript ends."""
    text = witness_text(evaluate(registry.build("c4-slot-activation")))
    assert text.splitlines() == [
        "c4-slot-activation: witness (M over M', T = 1)",
        HEADER,
        "          1  q                      -                                  -                              -"
        "                                0            a=0  [active slots differ]",
    ]


@attrs.frozen
class _RemainingBudget:
    """A public control (C6): the remaining budget B_a - L_a of every attribute, in order."""

    name: str = "remaining-budget"
    violates: str | None = None
    reads_private: ClassVar[bool] = False
    reads_views: ClassVar[bool] = False
    reads_history: ClassVar[bool] = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        caps = dict(context.caps)
        return tuple(caps[attribute] - spent for attribute, spent in context.ledgers)


def test_control_other_than_the_fallback_pairs_prints_as_its_json_value() -> None:
    loaded = load_interface_file(ROOT / "examples" / "figure2.toml")
    loaded = attrs.evolve(loaded, interface=attrs.evolve(loaded.interface, control=_RemainingBudget()))
    lines = audit_text(audit(loaded, "M", "M_no_diabetes", 2)).splitlines()
    assert lines[-6:] == [
        "  witness (M over M_no_diabetes; replayed loss 0.44468235209539068404057572578293509093950328227607):",
        HEADER,
        "          1  affordable-dinner      food=low-glycemic                  EM, 2/3 to debt,diabetes       "
        "['4/3', '14/3']                  0.222341     diabetes=2/3 debt=10/3",
        "                                    finance=finance-generic            EM generic, 8/3 to debt",
        "          2  affordable-dinner      food=low-glycemic                  EM, 2/3 to debt,diabetes       "
        "['2/3', '4/3']                   0.222341     diabetes=4/3 debt=20/3",
        "                                    finance=finance-generic            EM generic, 8/3 to debt",
    ]
