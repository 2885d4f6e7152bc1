"""Text and JSON of witness records (`record.WitnessRow`): one renderer for `dpmem audit`
and `python -m counterexamples`.

JSON, per turn: `turn`, `query`, `views` ([{slot, view}]), `slots` (per slot: view,
`release` "em" | "deterministic" | "fallback" | "reused", `generic`, `epsilon` charged, `charged`
attributes, `step_a_over_b` / `step_b_over_a`), `control` (the observable control as
plain JSON, or "<withheld ...>" when a broken control reads raw memory or scores),
`controls_differ`, `note`, `ledgers_after`, and the turn's `step_a_over_b` /
`step_b_over_a`. Text: one line per slot with a release column and a control column, so a
reader sees where the loss accrues; runs of identical turns are folded into one line.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.analysis.loss import Loss
from dpmem_ref.audit.numbers import json_value, loss_text
from dpmem_ref.audit.record import SlotRow, WitnessRow
from dpmem_ref.core.rational import fraction_text

WITHHELD = "<withheld: derived from raw memory or scores>"
STEP_DIGITS = 6  # significant digits of a step in the text table (proved digits only)


def control_json(value: Hashable, private: bool) -> Any:
    # A broken control derived from raw memory or scores: its value stays withheld.
    return WITHHELD if private else json_value(value)


def _steps_json(step_ab: Loss, step_ba: Loss) -> dict[str, str]:
    """`step_a_over_b` and `step_b_over_a`: the step keyed by each direction's JSON spelling."""
    return {f"step_{d.value}": loss_text(d.pick(step_ab, step_ba)) for d in LossDirection}


def slot_json(slot: SlotRow) -> dict[str, Any]:
    return {
        "slot": slot.slot,
        "view": slot.view,
        "release": slot.release,
        "generic": slot.generic,
        "epsilon": fraction_text(slot.epsilon),
        "charged": list(slot.charged),
        **_steps_json(slot.step_ab, slot.step_ba),
    }


def rows_json(rows: Sequence[WitnessRow], controls_private: bool) -> list[dict[str, Any]]:
    return [
        {
            "turn": row.turn,
            "query": row.query,
            "views": [{"slot": s.slot, "view": s.view} for s in row.slots],
            "slots": [slot_json(s) for s in row.slots],
            "control": control_json(row.control_a, controls_private),
            "control_b": control_json(row.control_b, controls_private),
            "controls_differ": row.controls_differ,
            "note": row.note,
            "ledgers_after": {a: fraction_text(v) for a, v in row.ledgers_after},
            **_steps_json(row.step_ab, row.step_ba),
        }
        for row in rows
    ]


def _release_text(slot: SlotRow) -> str:
    if slot.release == "fallback":
        return "fallback (cap), cost 0"
    if slot.release == "reused":
        return "reused (released view), cost 0"
    kind = "EM" if slot.release == "em" else "deterministic"
    drawn = " generic" if slot.generic else ""
    if not slot.charged:
        return f"{kind}{drawn}, uncharged"
    return f"{kind}{drawn}, {fraction_text(slot.epsilon)} to {','.join(slot.charged)}"


def _control_text(value: Hashable, private: bool) -> str:
    if private:
        return "<withheld>"
    if value is None:
        return "-"
    if isinstance(value, tuple) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return " ".join(f"{a}:{b}" for a, b in value)  # the fallback control: slot:released|fallback
    return str(json_value(value))


def _step(value: Loss) -> str:
    return loss_text(value, STEP_DIGITS)


def rows_text(
    rows: Sequence[WitnessRow], controls_private: bool, numerator: LossDirection | str = LossDirection.A_OVER_B
) -> list[str]:
    """The witness table (module docstring); `numerator` (a `LossDirection`, or its short
    side "a" / "b") picks the step direction shown."""
    direction = LossDirection.of(numerator)
    header = (
        f"    {'turn':>7}  {'query':<22} {'slot=view':<34} {'release':<30} {'control':<32} {'step':<12} ledgers after"
    )
    lines = [header]
    blocks: list[tuple[int, int, list[str]]] = []
    for row in rows:
        step = direction.pick(row.step_ab, row.step_ba)
        control = _control_text(row.control_a, controls_private)
        if row.controls_differ:
            control += " (differs)"
        ledgers = " ".join(f"{name}={fraction_text(value)}" for name, value in row.ledgers_after)
        note = f"  [{row.note}]" if row.note else ""
        body = []
        slots = row.slots or ()
        if not slots:
            body.append(f"{row.query:<22} {'-':<34} {'-':<30} {control:<32} {_step(step):<12} {ledgers}{note}")
        for index, slot in enumerate(slots):
            first = index == 0
            body.append(
                f"{row.query if first else '':<22} {slot.slot + '=' + slot.view:<34} {_release_text(slot):<30} "
                f"{control if first else '':<32} {_step(step) if first else '':<12} {ledgers if first else ''}"
                f"{note if first else ''}".rstrip()
            )
        if blocks and blocks[-1][2] == body:
            blocks[-1] = (blocks[-1][0], row.turn, body)
        else:
            blocks.append((row.turn, row.turn, body))
    for first_turn, last_turn, body in blocks:
        label = str(first_turn) if first_turn == last_turn else f"{first_turn}-{last_turn}"
        for index, text in enumerate(body):
            lines.append(f"    {label if index == 0 else '':>7}  {text}".rstrip())
    return lines
